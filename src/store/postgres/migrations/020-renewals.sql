-- Renewal (docs/operations.md "Renewal"), as sqlite/migrations/017-renewals.sql: one row per
-- direct credential, written before it is signed, with what renewing it needs (the recipient's
-- email sealed under KEY_ENCRYPTION_KEY and bound to the credential id; the claims provider's
-- user id) and what came of it. outcome: NULL (not renewed yet), 'renewed' (renewed_by names the
-- new credential), 'ineligible', 'not_renewable' (no sealed recipient).
CREATE TABLE renewals (
  credential_id     TEXT PRIMARY KEY,
  schema_id         TEXT NOT NULL,
  expires_at        TIMESTAMPTZ NOT NULL,
  recipient_sealed  TEXT,
  claims_user_id    TEXT,
  outcome           TEXT CHECK (outcome IN ('renewed', 'ineligible', 'not_renewable')),
  renewed_by        TEXT,
  outcome_at        TIMESTAMPTZ,
  detail            TEXT
);
CREATE INDEX renewals_due ON renewals (schema_id, expires_at) WHERE outcome IS NULL;

-- Direct credentials issued before: no recipient kept, so a sweep records them not renewable once.
INSERT INTO renewals (credential_id, schema_id, expires_at)
  SELECT credential_id, schema_id, expires_at FROM issuances WHERE channel = 'direct';
