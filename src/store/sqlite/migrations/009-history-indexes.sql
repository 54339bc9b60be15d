-- Admin history and audit reads page by keyset (docs/interface.md "Paging"): each filter needs an
-- index that yields its rows in created_at order, or a page reads the whole table to find them.
-- SQLite uses a partial index only when the query names the index's own WHERE term, so the
-- status filters get one per value (`status != 0` of issuances_nonzero_status does not serve
-- `status = 1`). Revoked, suspended and failed rows are few and none is written by an insert;
-- the pending index holds only what still waits for its upload.
CREATE INDEX issuances_revoked_created ON issuances (created_at) WHERE status = 1;
CREATE INDEX issuances_suspended_created ON issuances (created_at) WHERE status = 2;
CREATE INDEX issuances_pending_created ON issuances (created_at) WHERE upload_state = 'pending';
CREATE INDEX issuances_proof_created ON issuances (proof_type, created_at);
