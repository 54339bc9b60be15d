-- As sqlite/migrations/009-history-indexes.sql: admin history reads page by keyset
-- (docs/interface.md "Paging"), each filter through an index that yields its rows in
-- (created_at, seq) order. Partial indexes for the rare status values and Iden3 credentials,
-- which no SD-JWT insert writes; the holder, schema and email indexes gain seq in place of the
-- ones of 001 and 007, so an insert writes as many indexes as before.
CREATE INDEX issuances_revoked_created ON issuances (created_at, seq) WHERE status = 1;
CREATE INDEX issuances_suspended_created ON issuances (created_at, seq) WHERE status = 2;
CREATE INDEX issuances_failed_created ON issuances (created_at, seq) WHERE upload_state = 'failed';
CREATE INDEX issuances_bjj_created ON issuances (created_at, seq) WHERE proof_type = 'BJJ_SIG_2021';
CREATE INDEX issuances_holder_created_seq ON issuances (holder_did, created_at, seq);
DROP INDEX issuances_holder_created;
CREATE INDEX issuances_schema_created_seq ON issuances (schema_id, created_at, seq);
DROP INDEX issuances_schema_created;
CREATE INDEX issuances_email_created_seq ON issuances (email_hash, created_at, seq) WHERE email_hash IS NOT NULL;
DROP INDEX issuances_email_created;
