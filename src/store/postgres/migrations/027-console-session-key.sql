-- As sqlite/migrations/022-console-session-key.sql: the fingerprint of the admin key that opened a
-- console session; a session without one (from before this column) ends at its next request.
ALTER TABLE console_sessions ADD COLUMN key_hash TEXT;
