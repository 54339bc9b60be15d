-- A console session ends when the admin key that opened it is gone
-- (docs/operations.md "The admin console"): `key_hash` is the fingerprint of that key
-- (src/http/routes/console/session.ts; never the key), compared with the configured keys on every
-- request. A session from before this column has none, and ends at its next request: its
-- operator signs in again once.
ALTER TABLE console_sessions ADD COLUMN key_hash TEXT;
