-- As sqlite/migrations/007-email-hash.sql (`history --email`): the keyed hash of a direct
-- issuance's normalised recipient email, never the address; NULL for hosted issuances.
ALTER TABLE issuances ADD COLUMN email_hash TEXT;
CREATE INDEX issuances_email_created ON issuances (email_hash, created_at) WHERE email_hash IS NOT NULL;
