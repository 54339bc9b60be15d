-- `history --email`: a direct issuance keeps a keyed hash of its recipient's
-- normalised email (HMAC-SHA256 under meta `email_hash_salt`, src/issuance/email-hash.ts), never the
-- address. NULL for hosted issuances and for direct ones recorded before this migration.
ALTER TABLE issuances ADD COLUMN email_hash TEXT;
CREATE INDEX issuances_email_created ON issuances (email_hash, created_at) WHERE email_hash IS NOT NULL;
