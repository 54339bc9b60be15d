-- Fewer pages written per event (docs/benchmarks.md "Webhooks"): a commit writes every page it
-- touched, and a group commit of a few changes wrote, per event, a random page of the credential
-- index (keyed by the random credential id) besides the tails of the table, `sqlite_sequence` and
-- the unique index on the event id. The table is rebuilt (SQLite cannot drop AUTOINCREMENT or a
-- UNIQUE constraint in place), with `webhook_deliveries`, whose foreign key names it.
--
-- `seq` is a plain INTEGER PRIMARY KEY: SQLite gives a new row the largest rowid plus one, so
-- sequence numbers still increase by one per committed event (a rolled-back insert leaves no
-- gap, as before) as long as the newest event is never deleted: nothing deletes events; a purge
-- added later must keep the newest row (or bring AUTOINCREMENT back).
-- `id` (`evt_` and a UUIDv7: 48 bits of time and 74 random bits) is not read by any statement;
-- deliveries name their event by `seq`, so no index holds it.
-- `credential_at` is the created_at of the issuance the event names (`data.credentialId`), NULL
-- for events that name no credential: a credential's events are found through
-- (credential_at, credential id), a key that grows with time, so an issuance's events go to the
-- tail of that index.
CREATE TABLE webhook_events_new (
  seq           INTEGER PRIMARY KEY,
  id            TEXT NOT NULL,
  type          TEXT NOT NULL,
  data          TEXT NOT NULL,                    -- JSON
  created_at    INTEGER NOT NULL,                 -- epoch ms
  fanned_out    INTEGER NOT NULL DEFAULT 0,
  credential_at TEXT                              -- issuances.created_at of data.credentialId
);
INSERT INTO webhook_events_new (seq, id, type, data, created_at, fanned_out, credential_at)
  SELECT e.seq, e.id, e.type, e.data, e.created_at, e.fanned_out,
         (SELECT i.created_at FROM issuances i WHERE i.credential_id = json_extract(e.data, '$.credentialId'))
  FROM webhook_events e ORDER BY e.seq;

CREATE TABLE webhook_deliveries_new (
  id              TEXT PRIMARY KEY,
  event_seq       INTEGER NOT NULL REFERENCES webhook_events_new (seq),
  endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  state           TEXT NOT NULL DEFAULT 'pending', -- pending | delivered | failed
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,                      -- epoch ms; NULL once delivered or failed
  lease_until     INTEGER,
  last_status     INTEGER,
  last_error      TEXT,
  delivered_at    TEXT,
  created_at      TEXT NOT NULL,
  UNIQUE (event_seq, endpoint_id)
);
INSERT INTO webhook_deliveries_new
  (id, event_seq, endpoint_id, state, attempts, next_attempt_at, lease_until, last_status, last_error,
   delivered_at, created_at)
  SELECT id, event_seq, endpoint_id, state, attempts, next_attempt_at, lease_until, last_status, last_error,
         delivered_at, created_at
  FROM webhook_deliveries ORDER BY rowid;

DROP TABLE webhook_deliveries;
DROP TABLE webhook_events;
-- Renaming the new events table also renames it in webhook_deliveries_new's foreign key.
ALTER TABLE webhook_events_new RENAME TO webhook_events;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;

CREATE INDEX webhook_events_pending ON webhook_events (seq) WHERE fanned_out = 0;
CREATE INDEX webhook_events_credential
  ON webhook_events (credential_at, json_extract(data, '$.credentialId'))
  WHERE credential_at IS NOT NULL;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_page ON webhook_deliveries (endpoint_id, event_seq);
CREATE INDEX webhook_deliveries_state_page ON webhook_deliveries (endpoint_id, state, event_seq);
