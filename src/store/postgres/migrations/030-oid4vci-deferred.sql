-- Deferred issuance and notifications on the OpenID4VCI channel (OpenID4VCI 1.0 §9 and §11;
-- docs/interface.md "OpenID4VCI: the wallet door"), as sqlite/migrations/025-oid4vci-deferred.sql.
-- Times are epoch ms.
--
-- An offer gains the state 'deferred' (the claims provider answered "pending": the wallet polls
-- the deferred credential endpoint with `transaction_id`), between 'token' and 'issued'.
--   transaction_hash        SHA-256 of the transaction_id given to the wallet
--   transaction_expires_at  when the transaction lapses (OID4VCI_DEFERRED_SECONDS after deferral)
--   holder_jwks             the proofs' public keys (JSON array): each credential's cnf when issued
--   retry_interval          seconds the wallet is told to wait between polls (`interval`)
--   pushed_claims           claims an admin supplied for the transaction (JSON); NULL: ask the provider
--   notification_hash       SHA-256 of the notification_id given with the credential
--   notification_event      the last notification the wallet sent (credential_accepted, ...)
-- credential_id is set at deferral already: the id the credential will have.
ALTER TABLE oid4vci_offers DROP CONSTRAINT oid4vci_offers_state_check;
ALTER TABLE oid4vci_offers ADD CONSTRAINT oid4vci_offers_state_check
  CHECK (state IN ('offered', 'token', 'deferred', 'issued', 'locked'));
ALTER TABLE oid4vci_offers
  ADD COLUMN transaction_hash TEXT UNIQUE,
  ADD COLUMN transaction_expires_at BIGINT,
  ADD COLUMN holder_jwks TEXT,
  ADD COLUMN retry_interval INTEGER,
  ADD COLUMN pushed_claims TEXT,
  ADD COLUMN notification_hash TEXT UNIQUE,
  ADD COLUMN notification_event TEXT;
-- An admin supplies the claims of a deferred credential by its credential id.
CREATE INDEX oid4vci_offers_deferred ON oid4vci_offers (credential_id) WHERE state = 'deferred';
