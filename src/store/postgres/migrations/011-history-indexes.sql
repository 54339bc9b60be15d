-- Admin history and audit reads page by keyset (docs/interface.md "Paging"): each filter needs an
-- index that yields its rows in (created_at, seq) order, or a page reads the whole table to find
-- them. Revoked, suspended and failed rows are few and none is written by an insert; the pending
-- index holds only what still waits for its upload. Holder, schema and email keep their
-- (…, created_at) indexes: seq only orders the rows of one instant.
CREATE INDEX issuances_revoked_created ON issuances (created_at, seq) WHERE status = 1;
CREATE INDEX issuances_suspended_created ON issuances (created_at, seq) WHERE status = 2;
CREATE INDEX issuances_pending_created ON issuances (created_at, seq) WHERE upload_state = 'pending';
CREATE INDEX issuances_failed_created ON issuances (created_at, seq) WHERE upload_state = 'failed';
CREATE INDEX issuances_proof_created ON issuances (proof_type, created_at, seq);
