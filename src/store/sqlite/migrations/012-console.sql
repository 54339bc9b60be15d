-- The admin console (docs/operations.md "The admin console"). A session is kept on the server so
-- that several instances share it and a sign-out ends it everywhere; `id_hash` is the SHA-256 of
-- the cookie's value, never the value. Times are epoch ms.
CREATE TABLE console_sessions (
  id_hash       TEXT PRIMARY KEY,
  actor         TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  last_seen_at  INTEGER NOT NULL
);
CREATE INDEX console_sessions_created ON console_sessions (created_at);

-- A credential's audit trail (its id for `issue`, its revocation nonce for status changes).
CREATE INDEX audit_log_target ON audit_log (target, id);

-- A credential's webhook deliveries: the events that name it.
CREATE INDEX webhook_events_credential ON webhook_events (json_extract(data, '$.credentialId'))
  WHERE json_extract(data, '$.credentialId') IS NOT NULL;
