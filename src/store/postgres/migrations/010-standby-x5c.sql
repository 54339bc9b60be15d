-- Standby keys and X.509 chains kept with the shared keys, so that
-- `keys prepare`, `keys certificate` and an SD_JWT_ISSUER=x5c rotation reach every instance.
-- `standby`: prepared for the next rotation, published but not signing (the rotation promotes it).
-- `x5c`: the key's certificate chain, base64 DER, leaf first (RFC 7517 §4.7); public, so in clear.
ALTER TABLE issuer_keys ADD COLUMN standby BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE issuer_keys ADD COLUMN x5c TEXT[];
-- Still exactly one signing key per purpose: a standby key is not retired but does not sign.
DROP INDEX issuer_keys_one_active;
CREATE UNIQUE INDEX issuer_keys_one_active ON issuer_keys (purpose) WHERE retired_at IS NULL AND NOT standby;
