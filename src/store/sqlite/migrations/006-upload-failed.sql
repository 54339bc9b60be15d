-- An upload the hosting service refuses for good stops being retried and becomes
-- 'failed' (visible in history; `npm run admin -- uploads retry` puts it back to 'pending').
-- SQLite cannot change a CHECK constraint in place: the table is rebuilt with the same columns.
CREATE TABLE issuances_new (
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
  status            INTEGER NOT NULL DEFAULT 0,
  revoked_at        TEXT,
  suspended_at      TEXT,
  envelope          TEXT NOT NULL,
  upload_state      TEXT NOT NULL CHECK (upload_state IN ('pending', 'uploaded', 'failed')),
  upload_attempts   INTEGER NOT NULL DEFAULT 0,
  next_attempt_at   INTEGER,                      -- epoch ms; NULL once uploaded or failed
  lease_until       INTEGER,
  last_error        TEXT,
  storage_path      TEXT,
  uploaded_at       TEXT,
  UNIQUE (status_partition, status_index)
);
INSERT INTO issuances_new SELECT credential_id, channel, user_id, holder_did, schema_id, proof_type,
  revocation_nonce, status_partition, status_index, subject_hash, kid, created_at, expires_at, status,
  revoked_at, suspended_at, envelope, upload_state, upload_attempts, next_attempt_at, lease_until,
  last_error, storage_path, uploaded_at FROM issuances;
DROP TABLE issuances;
ALTER TABLE issuances_new RENAME TO issuances;
CREATE INDEX issuances_dedupe ON issuances (holder_did, schema_id, proof_type, subject_hash);
CREATE INDEX issuances_outbox ON issuances (upload_state, next_attempt_at);
CREATE INDEX issuances_created ON issuances (created_at);
CREATE INDEX issuances_kid_expiry ON issuances (kid, expires_at);
CREATE INDEX issuances_partition_status ON issuances (status_partition, status) WHERE status_partition IS NOT NULL;
CREATE INDEX issuances_schema_created ON issuances (schema_id, created_at);
CREATE INDEX issuances_holder_created ON issuances (holder_did, created_at);
