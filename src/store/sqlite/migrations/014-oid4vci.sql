-- The OpenID4VCI door (docs/interface.md "OpenID4VCI: the wallet door").
--
-- Its credentials are recorded like any other, with channel 'oid4vci'. They go to the wallet in
-- the credential response, so nothing is uploaded: their upload_state is 'none' (never pending,
-- never in the outbox). SQLite cannot change a CHECK constraint in place: the table is rebuilt
-- with the same columns and indexes, the indexes made in the order the earlier migrations made
-- them (the query planner breaks ties between equally good indexes by that order).
CREATE TABLE issuances_new (
  credential_id     TEXT PRIMARY KEY,
  channel           TEXT NOT NULL CHECK (channel IN ('hosted', 'direct', 'oid4vci')),
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
  upload_state      TEXT NOT NULL CHECK (upload_state IN ('pending', 'uploaded', 'failed', 'none')),
  upload_attempts   INTEGER NOT NULL DEFAULT 0,
  next_attempt_at   INTEGER,                      -- epoch ms; NULL once uploaded or failed, or 'none'
  lease_until       INTEGER,
  last_error        TEXT,
  storage_path      TEXT,
  uploaded_at       TEXT,
  email_hash        TEXT,
  batch_id          TEXT,
  renewed_from      TEXT,
  UNIQUE (status_partition, status_index)
);
INSERT INTO issuances_new SELECT credential_id, channel, user_id, holder_did, schema_id, proof_type,
  revocation_nonce, status_partition, status_index, subject_hash, kid, created_at, expires_at, status,
  revoked_at, suspended_at, envelope, upload_state, upload_attempts, next_attempt_at, lease_until,
  last_error, storage_path, uploaded_at, email_hash, batch_id, renewed_from FROM issuances;
DROP TABLE issuances;
ALTER TABLE issuances_new RENAME TO issuances;
CREATE INDEX issuances_created ON issuances (created_at);
CREATE INDEX issuances_kid_expiry ON issuances (kid, expires_at);
CREATE INDEX issuances_schema_created ON issuances (schema_id, created_at);
CREATE INDEX issuances_holder_created ON issuances (holder_did, created_at);
CREATE INDEX issuances_email_created ON issuances (email_hash, created_at) WHERE email_hash IS NOT NULL;
CREATE INDEX issuances_nonzero_status ON issuances (status_partition, status_index, status) WHERE status != 0;
CREATE INDEX issuances_outbox_pending ON issuances (next_attempt_at) WHERE upload_state = 'pending';
CREATE INDEX issuances_upload_failed ON issuances (created_at) WHERE upload_state = 'failed';
CREATE INDEX issuances_revoked_created ON issuances (created_at) WHERE status = 1;
CREATE INDEX issuances_suspended_created ON issuances (created_at) WHERE status = 2;
CREATE INDEX issuances_bjj_created ON issuances (created_at) WHERE proof_type = 'BJJ_SIG_2021';
CREATE INDEX issuances_batch ON issuances (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX issuances_renewed_from ON issuances (renewed_from) WHERE renewed_from IS NOT NULL;

-- One row per credential offer: the offer, its pre-authorized code, its transaction code, the
-- access token the code was exchanged for, and the credential it gave. Nothing secret is kept in
-- the clear: `offer_hash`, `code_hash`, `tx_code_hash` and `token_hash` are SHA-256 digests
-- (src/issuance/oid4vci-door.ts). Times are epoch ms.
-- state: 'offered' (code not yet used) → 'token' (exchanged for an access token) → 'issued'
-- (the credential was signed); 'locked' after too many wrong transaction codes.
CREATE TABLE oid4vci_offers (
  offer_hash        TEXT PRIMARY KEY,
  code_hash         TEXT NOT NULL UNIQUE,
  schema_id         TEXT NOT NULL,
  configuration_id  TEXT NOT NULL,
  user_id           TEXT NOT NULL,
  email_hash        TEXT,
  claims            TEXT,                         -- JSON; NULL: the claims provider's, at issuance
  tx_code_hash      TEXT,
  tx_code_attempts  INTEGER NOT NULL DEFAULT 0,
  state             TEXT NOT NULL CHECK (state IN ('offered', 'token', 'issued', 'locked')),
  expires_at        INTEGER NOT NULL,
  token_hash        TEXT UNIQUE,
  token_expires_at  INTEGER,
  dpop_jkt          TEXT,
  credential_id     TEXT,
  created_by        TEXT NOT NULL,
  created_at        INTEGER NOT NULL
);
CREATE INDEX oid4vci_offers_expiry ON oid4vci_offers (expires_at);

-- c_nonce values (OpenID4VCI 1.0 §7): each taken once, by the first proof that carries it.
CREATE TABLE oid4vci_nonces (
  nonce       TEXT PRIMARY KEY,
  expires_at  INTEGER NOT NULL
);
CREATE INDEX oid4vci_nonces_expiry ON oid4vci_nonces (expires_at);
