-- As sqlite/migrations/020-suspended-expiry.sql: history's `status=suspended` is suspended and not
-- yet expired, and most suspended rows of a table of years have expired. The suspended index
-- carries expires_at (INCLUDE: the key order stays (created_at, seq)), so the walk checks the
-- expiry on the index entry (an index-only scan where the visibility map allows) and fetches a
-- table row only for the rows a page keeps. No insert writes it (a credential starts valid).
CREATE INDEX issuances_suspended_expires ON issuances (created_at, seq) INCLUDE (expires_at) WHERE status = 2;
DROP INDEX issuances_suspended_created;
