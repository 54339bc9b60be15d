-- A new event wakes the webhook worker of every instance at once (docs/operations.md "Webhooks"),
-- instead of waiting for its next sweep: each instance LISTENs on this channel. NOTIFY is sent
-- when the writing transaction commits, never for one rolled back, and the same channel and
-- payload are sent once per transaction however many events it wrote. The sweep stays: a
-- notification lost with a listening connection only delays an event until it.
CREATE FUNCTION webhook_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('issuer_kit_webhook_events', '');
  RETURN NULL;
END
$$;
CREATE TRIGGER webhook_events_notify AFTER INSERT ON webhook_events
  FOR EACH ROW EXECUTE FUNCTION webhook_events_notify();
