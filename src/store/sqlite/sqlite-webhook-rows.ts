import type {
  DeliveryQuery,
  WebhookDeliveryRecord,
  WebhookDeliveryState,
  WebhookEndpointRecord,
} from '../webhook-store.js';

/** The webhook tables' rows on SQLite, and the reads shared with the query-plan tests. */

export interface EndpointRow {
  id: string;
  url: string;
  events: string;
  description: string | null;
  secret: string;
  previous_secret: string | null;
  previous_until: number | null;
  created_at: string;
}

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  data: string;
  seq: number;
  event_at: number;
  state: WebhookDeliveryState;
  attempts: number;
  next_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: string | null;
  created_at: string;
}

export const toEndpoint = (r: EndpointRow): WebhookEndpointRecord => ({
  id: r.id,
  url: r.url,
  events: JSON.parse(r.events) as string[],
  description: r.description,
  secret: r.secret,
  previousSecret: r.previous_secret,
  previousUntil: r.previous_until === null ? null : new Date(r.previous_until),
  createdAt: new Date(r.created_at),
});

export const toDelivery = (r: DeliveryRow): WebhookDeliveryRecord => ({
  id: r.id,
  endpointId: r.endpoint_id,
  eventId: r.event_id,
  type: r.type,
  data: r.data,
  sequence: r.seq,
  eventAt: new Date(r.event_at),
  state: r.state,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at === null ? null : new Date(r.next_attempt_at),
  lastStatus: r.last_status,
  lastError: r.last_error,
  deliveredAt: r.delivered_at === null ? null : new Date(r.delivered_at),
  createdAt: new Date(r.created_at),
});

export const DELIVERY_COLUMNS = `d.id, d.endpoint_id, e.id AS event_id, e.type, e.data, e.seq, e.created_at AS event_at,
  d.state, d.attempts, d.next_attempt_at, d.last_status, d.last_error, d.delivered_at, d.created_at`;

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
