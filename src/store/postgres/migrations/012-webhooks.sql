-- Webhooks in Standard Webhooks format (docs/operations.md "Webhooks").
-- Endpoints with their signing secrets, sealed with KEY_ENCRYPTION_KEY like the keys when it is
-- set; `previous_secret` keeps signing beside `secret` until `previous_until` after a rotation.
CREATE TABLE webhook_endpoints (
  id              TEXT PRIMARY KEY,
  url             TEXT NOT NULL,
  events          TEXT NOT NULL,                -- JSON array of event types, or ["*"]
  description     TEXT,
  secret          TEXT NOT NULL,
  previous_secret TEXT,
  previous_until  TIMESTAMPTZ,
  created_at      TIMESTAMPTZ NOT NULL
);

-- The event outbox: written in the same transaction as the change it reports (only while an
-- endpoint exists). `seq` is the issuer's increasing event sequence. `fanned_out` turns 1 once
-- a worker has made one delivery per subscribed endpoint.
CREATE TABLE webhook_events (
  seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id          TEXT NOT NULL UNIQUE,
  type        TEXT NOT NULL,
  data        TEXT NOT NULL,                    -- JSON
  created_at  TIMESTAMPTZ NOT NULL,
  fanned_out  SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX webhook_events_pending ON webhook_events (seq) WHERE fanned_out = 0;

-- One event to one endpoint; `id` is the `webhook-id`, the same on every attempt.
CREATE TABLE webhook_deliveries (
  id              TEXT PRIMARY KEY,
  event_seq       BIGINT NOT NULL REFERENCES webhook_events (seq),
  endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  state           TEXT NOT NULL DEFAULT 'pending', -- pending | delivered | failed
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TIMESTAMPTZ,                  -- NULL once delivered or failed
  lease_until     TIMESTAMPTZ,
  last_status     INTEGER,
  last_error      TEXT,
  delivered_at    TIMESTAMPTZ,
  created_at      TIMESTAMPTZ NOT NULL,
  UNIQUE (event_seq, endpoint_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, state, created_at);
