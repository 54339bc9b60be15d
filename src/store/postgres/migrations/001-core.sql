-- PostgreSQL engine, core tables (docs/several-instances.md "Storage engines"). Same data as sqlite/migrations/001-core.sql and
-- 004-admin.sql; timestamps are timestamptz, nonces bigint (always below 2^53), and everything
-- several instances race on is settled by a unique constraint rather than by a lock.

-- Issuances: one row per signed credential (credential id = upload externalId).
CREATE TABLE issuances (
  credential_id     TEXT PRIMARY KEY,
  -- Insertion order: breaks created_at ties so that history paging is stable.
  seq               BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  channel           TEXT NOT NULL CHECK (channel IN ('hosted', 'direct')),
  user_id           TEXT NOT NULL,
  holder_did        TEXT NOT NULL,
  schema_id         TEXT NOT NULL,
  proof_type        TEXT NOT NULL,
  -- Unique: two instances drawing the same nonce get 'nonce-taken' and draw again.
  revocation_nonce  BIGINT NOT NULL UNIQUE CHECK (revocation_nonce >= 0 AND revocation_nonce < 9007199254740992),
  status_partition  INTEGER,
  status_index      INTEGER CHECK (status_index >= 0),
  subject_hash      TEXT NOT NULL,
  kid               TEXT NOT NULL,
  created_at        TIMESTAMPTZ NOT NULL,
  expires_at        TIMESTAMPTZ NOT NULL,
  status            SMALLINT NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)),  -- token status list values
  revoked_at        TIMESTAMPTZ,
  suspended_at      TIMESTAMPTZ,
  envelope          TEXT NOT NULL,                -- JSON of the dstorage/vcs body: ciphertext and metadata only
  upload_state      TEXT NOT NULL CHECK (upload_state IN ('pending', 'uploaded')),
  upload_attempts   INTEGER NOT NULL DEFAULT 0,
  next_attempt_at   TIMESTAMPTZ,                  -- NULL once uploaded
  lease_until       TIMESTAMPTZ,                  -- an instance's worker holds the upload until then
  last_error        TEXT,
  storage_path      TEXT,
  uploaded_at       TIMESTAMPTZ,
  -- Unique: two instances proposing the same slot get 'slot-taken' and propose again.
  CONSTRAINT issuances_status_slot UNIQUE (status_partition, status_index)
);
CREATE INDEX issuances_dedupe ON issuances (holder_did, schema_id, proof_type, subject_hash);
CREATE INDEX issuances_outbox ON issuances (next_attempt_at) WHERE upload_state = 'pending';
CREATE INDEX issuances_created ON issuances (created_at, seq);
CREATE INDEX issuances_kid_expiry ON issuances (kid, expires_at);
CREATE INDEX issuances_partition_status ON issuances (status_partition, status) WHERE status <> 0;
CREATE INDEX issuances_schema_created ON issuances (schema_id, created_at);
CREATE INDEX issuances_holder_created ON issuances (holder_did, created_at);

-- Token status list partitions (draft-ietf-oauth-status-list). Statuses live on issuances; this
-- row caches the signed token. `version` grows with every status change in the partition, so
-- every instance can tell the same list apart from a newer one without process memory.
CREATE TABLE status_list_partitions (
  partition     INTEGER PRIMARY KEY CHECK (partition >= 0),
  size          INTEGER NOT NULL CHECK (size > 0),
  bits          SMALLINT NOT NULL CHECK (bits IN (1, 2)),
  -- Set once a scan finds no free slot: new credentials then go to the next partition.
  is_full       BOOLEAN NOT NULL DEFAULT false,
  version       BIGINT NOT NULL DEFAULT 0,
  created_at    TIMESTAMPTZ NOT NULL,
  published_at  TIMESTAMPTZ,
  token         TEXT,
  etag          TEXT,
  -- The snapshot a token is being built from; any status change clears it (the build is then stale).
  build_ticket  TEXT
);

-- Allocations per partition, spread over a few counter rows so that concurrent issuances do not
-- queue on one row lock: a partition's `allocated` is the sum of its shards.
CREATE TABLE status_list_allocations (
  partition  INTEGER NOT NULL REFERENCES status_list_partitions (partition),
  shard      SMALLINT NOT NULL,
  allocated  INTEGER NOT NULL,
  PRIMARY KEY (partition, shard)
);

-- Built-in claims source (docs/schemas-and-claims.md, provider "sqlite"). JSON kept as written (text, not jsonb,
-- which would reorder keys).
CREATE TABLE claims (
  user_id     TEXT NOT NULL,
  schema_id   TEXT NOT NULL,
  claims      TEXT NOT NULL,
  expires_at  TIMESTAMPTZ,
  updated_at  TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (user_id, schema_id)
);

-- Idempotency-Key replay for admin routes (`status` NULL = the first request is still running).
CREATE TABLE idempotency_keys (
  scope         TEXT NOT NULL,
  key           TEXT NOT NULL,
  request_hash  TEXT NOT NULL,
  status        INTEGER,
  response      TEXT,
  created_at    TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
