-- Renewal (docs/operations.md "Renewal"): one row per direct credential, written before it is
-- signed, with what renewing it needs and what came of it. The recipient's email is kept only
-- sealed under KEY_ENCRYPTION_KEY and bound to the credential id
-- (docs/security.md "What renewal keeps"); the claims provider's user id when the claims came from it.
-- outcome: NULL (not renewed yet), 'renewed' (renewed_by names the new credential), 'ineligible'
-- (the claims provider no longer has the holder), 'not_renewable' (no sealed recipient). The
-- sweep reads the rows with no outcome by schema and expiry (renewals_due).
CREATE TABLE renewals (
  credential_id     TEXT PRIMARY KEY,
  schema_id         TEXT NOT NULL,
  expires_at        TEXT NOT NULL,
  recipient_sealed  TEXT,
  claims_user_id    TEXT,
  outcome           TEXT CHECK (outcome IN ('renewed', 'ineligible', 'not_renewable')),
  renewed_by        TEXT,
  outcome_at        TEXT,
  detail            TEXT
);
CREATE INDEX renewals_due ON renewals (schema_id, expires_at) WHERE outcome IS NULL;

-- Direct credentials issued before: no recipient kept, so a sweep records them not renewable once.
INSERT INTO renewals (credential_id, schema_id, expires_at)
  SELECT credential_id, schema_id, expires_at FROM issuances WHERE channel = 'direct';
