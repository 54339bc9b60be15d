-- 021-webhook-event-notify.sql's trigger is dropped: a transaction that sends NOTIFY takes, at
-- commit, a lock held until its commit record is flushed, so every write that recorded an event
-- (issuances, status changes, marks) committed one at a time across all instances. The webhook
-- worker of each instance now looks for new events instead (docs/operations.md "Webhooks"): one
-- page of the partial index webhook_events_pending every 250 ms.
DROP TRIGGER webhook_events_notify ON webhook_events;
DROP FUNCTION webhook_events_notify();
