import {
  DELIVERY_COLUMNS,
  type WebhookDeliveryColumns,
  type WebhookEndpointColumns,
  webhookRowReaders,
} from '../webhook-row.js';
import type { DeliveryQuery } from '../webhook-store.js';

/** The webhook tables' rows on SQLite, and the reads shared with the query-plan tests. */

export type EndpointRow = WebhookEndpointColumns<string, number>;
export type DeliveryRow = WebhookDeliveryColumns<string, number, number>;

export const { endpoint: toEndpoint, delivery: toDelivery } = webhookRowReaders<string, number, number>({
  time: (t) => new Date(t),
  epoch: (ms) => new Date(ms),
  seq: (n) => n,
});

/**
 * A credential's deliveries, newest event first, through webhook_events_credential (migration 018):
 * the credential's created_at, then its id. An event of a credential with no issuance row has no
 * credential_at and is not listed (the console asks only about credentials it has).
 */
export const CREDENTIAL_DELIVERIES_SQL = `SELECT ${DELIVERY_COLUMNS}
  FROM webhook_events e JOIN webhook_deliveries d ON d.event_seq = e.seq
  WHERE e.credential_at = (SELECT created_at FROM issuances WHERE credential_id = @id)
    AND json_extract(e.data, '$.credentialId') = @id AND e.credential_at IS NOT NULL
  ORDER BY e.seq DESC, d.created_at DESC LIMIT @limit`;

/** An endpoint's deliveries, newest event first, through webhook_deliveries_page (or _state_page). */
export const deliveriesPageSql = (q: Pick<DeliveryQuery, 'state' | 'before'>): string =>
  `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
   WHERE d.endpoint_id = @endpointId ${q.state ? 'AND d.state = @state' : ''}
     ${q.before === undefined ? '' : 'AND d.event_seq < @before'}
   ORDER BY d.event_seq DESC LIMIT @take`;

/** The events not yet fanned out, oldest first, through webhook_events_pending. */
export const WAITING_EVENTS_SQL =
  'SELECT seq, id, type, data, created_at FROM webhook_events WHERE fanned_out = 0 ORDER BY seq LIMIT ?';
