-- What the key-compromise playbook did for a kid: the key it rotated to and the revoke job it
-- started, so a second run on the kid (at once, or later, from any process) answers these instead
-- of rotating and revoking again (docs/operations.md "A signing key is compromised").
-- Null job_id: a run that stopped before its job (or one recorded before this migration).
-- As sqlite/migrations/023-compromise-outcome.sql.
ALTER TABLE compromised_keys ADD COLUMN rotated_to TEXT;
ALTER TABLE compromised_keys ADD COLUMN job_id TEXT;
ALTER TABLE compromised_keys ADD COLUMN lists_republished INTEGER;
