-- Every index on issuances is written by every insert, and each one a commit touches is
-- another page appended to the WAL. Three were written for nothing or for rare rows only:
-- * issuances_dedupe was never chosen: the duplicate check (and admin activeFor) searches
--   issuances_holder_created (holder_did = ?, newest first) and filters the holder's few rows.
-- * status list builds read only non-zero statuses (revoked, suspended): a partial index on those
--   is not touched by an insert at all (status starts at 0).
-- * the outbox scans pending uploads only, and the failed count and retry read failed ones only:
--   two partial indexes stay small (uploaded rows leave them) instead of one over every row.
DROP INDEX issuances_dedupe;
DROP INDEX issuances_partition_status;
CREATE INDEX issuances_nonzero_status ON issuances (status_partition, status_index, status) WHERE status != 0;
DROP INDEX issuances_outbox;
CREATE INDEX issuances_outbox_pending ON issuances (next_attempt_at) WHERE upload_state = 'pending';
CREATE INDEX issuances_upload_failed ON issuances (created_at) WHERE upload_state = 'failed';
