-- As sqlite/migrations/012-console.sql: console sessions (SHA-256 of the cookie's value, epoch
-- ms), a credential's audit trail and its webhook events.
CREATE TABLE console_sessions (
  id_hash       TEXT PRIMARY KEY,
  actor         TEXT NOT NULL,
  created_at    BIGINT NOT NULL,
  last_seen_at  BIGINT NOT NULL
);
CREATE INDEX console_sessions_created ON console_sessions (created_at);

CREATE INDEX audit_log_target ON audit_log (target, id);

CREATE INDEX webhook_events_credential ON webhook_events (((data::jsonb) ->> 'credentialId'))
  WHERE ((data::jsonb) ->> 'credentialId') IS NOT NULL;
