-- Admin toolkit (docs/interface.md admin routes): issuance history filters and Idempotency-Key pruning.
CREATE INDEX IF NOT EXISTS issuances_schema_created ON issuances (schema_id, created_at);
CREATE INDEX IF NOT EXISTS issuances_holder_created ON issuances (holder_did, created_at);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at);
