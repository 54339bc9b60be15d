-- Deferred issuance and notifications on the OpenID4VCI channel (OpenID4VCI 1.0 §9 and §11;
-- docs/interface.md "OpenID4VCI: the wallet door"). Times are epoch ms.
--
-- An offer gains the state 'deferred' (the claims provider answered "pending": the wallet polls
-- the deferred credential endpoint with `transaction_id`), between 'token' and 'issued'. SQLite
-- cannot change a CHECK constraint in place: the table is rebuilt with its columns, the new ones
-- and its index.
--   transaction_hash        SHA-256 of the transaction_id given to the wallet
--   transaction_expires_at  when the transaction lapses (OID4VCI_DEFERRED_SECONDS after deferral)
--   holder_jwks             the proofs' public keys (JSON array): each credential's cnf when issued
--   retry_interval          seconds the wallet is told to wait between polls (`interval`)
--   pushed_claims           claims an admin supplied for the transaction (JSON); NULL: ask the provider
--   notification_hash       SHA-256 of the notification_id given with the credential
--   notification_event      the last notification the wallet sent (credential_accepted, ...)
-- credential_id is set at deferral already: the id the credential will have.
CREATE TABLE oid4vci_offers_new (
  offer_hash              TEXT PRIMARY KEY,
  code_hash               TEXT NOT NULL UNIQUE,
  schema_id               TEXT NOT NULL,
  configuration_id        TEXT NOT NULL,
  user_id                 TEXT NOT NULL,
  email_hash              TEXT,
  claims                  TEXT,
  tx_code_hash            TEXT,
  tx_code_attempts        INTEGER NOT NULL DEFAULT 0,
  state                   TEXT NOT NULL CHECK (state IN ('offered', 'token', 'deferred', 'issued', 'locked')),
  expires_at              INTEGER NOT NULL,
  token_hash              TEXT UNIQUE,
  token_expires_at        INTEGER,
  dpop_jkt                TEXT,
  credential_id           TEXT,
  created_by              TEXT NOT NULL,
  created_at              INTEGER NOT NULL,
  transaction_hash        TEXT UNIQUE,
  transaction_expires_at  INTEGER,
  holder_jwks             TEXT,
  retry_interval          INTEGER,
  pushed_claims           TEXT,
  notification_hash       TEXT UNIQUE,
  notification_event      TEXT,
  grant_type              TEXT NOT NULL DEFAULT 'pre-authorized_code'
    CHECK (grant_type IN ('pre-authorized_code', 'authorization_code'))
);
INSERT INTO oid4vci_offers_new (offer_hash, code_hash, schema_id, configuration_id, user_id, email_hash,
  claims, tx_code_hash, tx_code_attempts, state, expires_at, token_hash, token_expires_at, dpop_jkt,
  credential_id, created_by, created_at, grant_type)
SELECT offer_hash, code_hash, schema_id, configuration_id, user_id, email_hash, claims, tx_code_hash,
  tx_code_attempts, state, expires_at, token_hash, token_expires_at, dpop_jkt, credential_id, created_by,
  created_at, grant_type FROM oid4vci_offers;
DROP TABLE oid4vci_offers;
ALTER TABLE oid4vci_offers_new RENAME TO oid4vci_offers;
CREATE INDEX oid4vci_offers_expiry ON oid4vci_offers (expires_at);
-- An admin supplies the claims of a deferred credential by its credential id.
CREATE INDEX oid4vci_offers_deferred ON oid4vci_offers (credential_id) WHERE state = 'deferred';
