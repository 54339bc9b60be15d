-- History's `status=suspended` is suspended and not yet expired: a credential past its expiry is
-- listed as expired (src/store/keyset.ts, statusFilterSql). Most suspended rows of a table
-- of years have expired, and the walk of issuances_suspended_created read each one's table row to
-- learn its expiry, one page of the file per row. With expires_at in the index the walk checks it
-- on the index entry and reads a table row only for the rows a page keeps. No insert writes this
-- index (a credential starts valid); suspending and reinstating do, as they did the one it replaces.
CREATE INDEX issuances_suspended_expires ON issuances (created_at, expires_at) WHERE status = 2;
DROP INDEX issuances_suspended_created;
