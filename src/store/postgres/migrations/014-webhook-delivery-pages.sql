-- An endpoint's deliveries are paged by event sequence, newest first, with or without a state
-- filter (docs/interface.md "Paging"): each read walks one of these indexes in sort order.
DROP INDEX webhook_deliveries_endpoint;
CREATE INDEX webhook_deliveries_page ON webhook_deliveries (endpoint_id, event_seq);
CREATE INDEX webhook_deliveries_state_page ON webhook_deliveries (endpoint_id, state, event_seq);
