-- Issuances: one row per signed credential (credential id = upload externalId) (docs/several-instances.md "Storage engines").
CREATE TABLE issuances (
  credential_id     TEXT PRIMARY KEY,
  channel           TEXT NOT NULL CHECK (channel IN ('hosted', 'direct')),
  user_id           TEXT NOT NULL,
  holder_did        TEXT NOT NULL,
  schema_id         TEXT NOT NULL,
  proof_type        TEXT NOT NULL,
  revocation_nonce  INTEGER NOT NULL UNIQUE,
  status_partition  INTEGER,
  status_index      INTEGER,
  subject_hash      TEXT NOT NULL,
  kid               TEXT NOT NULL,
  created_at        TEXT NOT NULL,
  expires_at        TEXT NOT NULL,
  status            INTEGER NOT NULL DEFAULT 0,   -- 0 valid, 1 revoked, 2 suspended (token status list values)
  revoked_at        TEXT,
  suspended_at      TEXT,
  envelope          TEXT NOT NULL,                -- JSON of the dstorage/vcs body: ciphertext and metadata only
  upload_state      TEXT NOT NULL CHECK (upload_state IN ('pending', 'uploaded')),
  upload_attempts   INTEGER NOT NULL DEFAULT 0,
  next_attempt_at   INTEGER,                      -- epoch ms; NULL once uploaded
  lease_until       INTEGER,                      -- epoch ms; a worker holds the upload until then
  last_error        TEXT,
  storage_path      TEXT,
  uploaded_at       TEXT,
  UNIQUE (status_partition, status_index)
);
CREATE INDEX issuances_dedupe ON issuances (holder_did, schema_id, proof_type, subject_hash);
CREATE INDEX issuances_outbox ON issuances (upload_state, next_attempt_at);
CREATE INDEX issuances_created ON issuances (created_at);
CREATE INDEX issuances_kid_expiry ON issuances (kid, expires_at);
CREATE INDEX issuances_partition_status ON issuances (status_partition, status) WHERE status_partition IS NOT NULL;

-- Token status list partitions (draft-ietf-oauth-status-list). Statuses live on issuances;
-- this row counts allocations and caches the signed token (NULL = must be re-signed).
CREATE TABLE status_list_partitions (
  partition        INTEGER PRIMARY KEY,
  size             INTEGER NOT NULL,
  bits             INTEGER NOT NULL,
  allocated        INTEGER NOT NULL DEFAULT 0,
  created_at       TEXT NOT NULL,
  published_at     TEXT,
  token            TEXT,
  etag             TEXT
);

-- Built-in claims source (docs/schemas-and-claims.md, provider "sqlite").
CREATE TABLE claims (
  user_id     TEXT NOT NULL,
  schema_id   TEXT NOT NULL,
  claims      TEXT NOT NULL,
  expires_at  TEXT,
  updated_at  TEXT NOT NULL,
  PRIMARY KEY (user_id, schema_id)
);

-- Idempotency-Key replay for admin routes.
CREATE TABLE idempotency_keys (
  scope         TEXT NOT NULL,
  key           TEXT NOT NULL,
  request_hash  TEXT NOT NULL,
  status        INTEGER,
  response      TEXT,
  created_at    TEXT NOT NULL,
  PRIMARY KEY (scope, key)
);
