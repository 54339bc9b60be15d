import type { WebhookDeliveryRecord, WebhookDeliveryState, WebhookEndpointRecord } from './webhook-store.js';

/**
 * The webhook tables' rows as an engine's driver returns them: the same columns on both engines
 * but for a timestamp (`Time`: ISO text in SQLite, `Date` from pg), an epoch time (`Epoch`: epoch
 * milliseconds in SQLite, `Date` from pg) and the event sequence (`Seq`: number, or pg's bigint
 * string).
 */
export interface WebhookEndpointColumns<Time, Epoch> {
  id: string;
  url: string;
  events: string;
  description: string | null;
  secret: string;
  previous_secret: string | null;
  previous_until: Epoch | null;
  created_at: Time;
}

export interface WebhookDeliveryColumns<Time, Epoch, Seq> {
  id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  data: string;
  seq: Seq;
  event_at: Epoch;
  state: WebhookDeliveryState;
  attempts: number;
  next_attempt_at: Epoch | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: Time | null;
  created_at: Time;
}

/** How an engine's driver values become a record's. */
export interface WebhookColumnReader<Time, Epoch, Seq> {
  time(value: Time): Date;
  epoch(value: Epoch): Date;
  seq(value: Seq): number;
}

/** The columns a delivery is read from (`d`: webhook_deliveries, `e`: its webhook_events row). */
export const DELIVERY_COLUMNS = `d.id, d.endpoint_id, e.id AS event_id, e.type, e.data, e.seq, e.created_at AS event_at,
  d.state, d.attempts, d.next_attempt_at, d.last_status, d.last_error, d.delivered_at, d.created_at`;

/** An engine's row readers, given how its driver hands back times and sequences. */
export function webhookRowReaders<Time, Epoch, Seq>(read: WebhookColumnReader<Time, Epoch, Seq>) {
  const orNull = <V>(value: V | null, as: (v: V) => Date): Date | null => (value === null ? null : as(value));
  return {
    endpoint: (r: WebhookEndpointColumns<Time, Epoch>): WebhookEndpointRecord => ({
      id: r.id,
      url: r.url,
      events: JSON.parse(r.events) as string[],
      description: r.description,
      secret: r.secret,
      previousSecret: r.previous_secret,
      previousUntil: orNull(r.previous_until, read.epoch),
      createdAt: read.time(r.created_at),
    }),
    delivery: (r: WebhookDeliveryColumns<Time, Epoch, Seq>): WebhookDeliveryRecord => ({
      id: r.id,
      endpointId: r.endpoint_id,
      eventId: r.event_id,
      type: r.type,
      data: r.data,
      sequence: read.seq(r.seq),
      eventAt: read.epoch(r.event_at),
      state: r.state,
      attempts: r.attempts,
      nextAttemptAt: orNull(r.next_attempt_at, read.epoch),
      lastStatus: r.last_status,
      lastError: r.last_error,
      deliveredAt: orNull(r.delivered_at, read.time),
      createdAt: read.time(r.created_at),
    }),
  };
}
