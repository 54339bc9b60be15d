import { v7 as uuidv7 } from 'uuid';
import type { NewWebhookEvent } from '../events/catalogue.js';

// The event catalogue lives in src/events; these names stay importable from here.
export {
  keyRotatedEvent,
  newWebhookEventId,
  STATUS_EVENT_TYPE,
  statusChangeEvent,
} from '../events/builders.js';
export {
  type NewWebhookEvent,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_EVENTS,
  type WebhookEventType,
} from '../events/catalogue.js';
/**
 * Webhook endpoints, the event outbox and its deliveries (docs/operations.md "Webhooks"). Events
 * are written by the issuance and status stores in the transaction of the change they report,
 * while at least one endpoint exists; a worker fans each event out to one delivery per subscribed
 * endpoint (a batch of events in one transaction), then delivers under a lease like the upload
 * outbox.
 */

export type WebhookDeliveryState = 'pending' | 'delivered' | 'failed';

export interface NewWebhookEndpoint {
  id: string;
  url: string;
  /** Event types, or `['*']`. */
  events: string[];
  description: string | null;
  /** The stored form of the secret (sealed where the engine keeps keys sealed). */
  secret: string;
  createdAt: Date;
}

export interface WebhookEndpointRecord extends Omit<NewWebhookEndpoint, 'secret'> {
  /** The stored secret and, for a while after a rotation, the previous one. */
  secret: string;
  previousSecret: string | null;
  previousUntil: Date | null;
}

/** One leased delivery with what its attempt needs. */
export interface WebhookDeliveryRecord {
  /** The `webhook-id`, the same on every attempt. */
  id: string;
  endpointId: string;
  eventId: string;
  type: string;
  /** The event's JSON data. */
  data: string;
  /** The issuer's increasing event sequence. */
  sequence: number;
  eventAt: Date;
  state: WebhookDeliveryState;
  attempts: number;
  nextAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

export interface DeliveryQuery {
  endpointId: string;
  state?: WebhookDeliveryState | undefined;
  limit: number;
  /** Only deliveries of events before this sequence number (the previous page's `next`). */
  before?: number | undefined;
}

export interface WebhookStore {
  /**
   * Writes an event of a change that is not one database transaction (a key rotation: key files
   * on SQLite), once the change is in place; nothing while no endpoint exists.
   */
  recordEvent(event: NewWebhookEvent, at: Date): Promise<void>;
  addEndpoint(endpoint: NewWebhookEndpoint): Promise<void>;
  listEndpoints(): Promise<WebhookEndpointRecord[]>;
  getEndpoint(id: string): Promise<WebhookEndpointRecord | undefined>;
  /** Removes the endpoint and its deliveries; false when there was none. */
  removeEndpoint(id: string): Promise<boolean>;
  /**
   * Makes one pending delivery per subscribed endpoint for up to `limit` events not yet fanned out,
   * oldest first; answers how many events it took (0: none waiting).
   */
  fanOut(now: Date, newId: () => string, limit: number): Promise<number>;
  /**
   * Takes up to `limit` due deliveries for `leaseMs` (one instance at a time each), after fanning
   * out the events not yet fanned out (an engine may lease the deliveries it makes at once, in
   * the same transaction). `delivered`: the previous batch's marks (as `markDelivered`), written
   * first, in the same transaction where the engine can.
   */
  leaseDueDeliveries(
    now: Date,
    leaseMs: number,
    limit: number,
    delivered?: DeliveredMarks,
  ): Promise<WebhookDeliveryRecord[]>;
  /** Marks deliveries answered 2xx (with the status each got), in one transaction. */
  markDelivered(marks: ReadonlyArray<{ id: string; status: number }>, at: Date): Promise<void>;
  /** Counts the attempt; past `giveUpAfter` attempts the delivery is `failed`. */
  markDeliveryFailed(
    id: string,
    status: number | null,
    error: string,
    nextAttemptAt: Date,
    giveUpAfter: number,
  ): Promise<{ attempts: number; gaveUp: boolean }>;
  /**
   * Makes `secret` the endpoint's signing secret; the one it replaces keeps signing beside it
   * until `previousUntil`. False when there is no such endpoint.
   */
  rotateSecret(id: string, secret: string, previousUntil: Date): Promise<boolean>;
  /** Puts a `failed` delivery back in the queue (attempts from 0); false when it is not `failed`. */
  retryDelivery(id: string, now: Date): Promise<boolean>;
  /** Puts every `failed` delivery of an endpoint back in the queue; answers how many. */
  retryFailedDeliveries(endpointId: string, now: Date): Promise<number>;
  countFailedDeliveries(): Promise<number>;
  /** Deliveries of the events that name `credentialId`, newest first (webhook_events_credential). */
  listCredentialDeliveries(credentialId: string, limit: number): Promise<WebhookDeliveryRecord[]>;
  /**
   * A page of an endpoint's deliveries, newest event first, keyset-paged on the event sequence
   * (docs/interface.md "Paging"): `before` is the previous page's `next`; `next` is null on the
   * last page.
   */
  listDeliveries(query: DeliveryQuery): Promise<{ records: WebhookDeliveryRecord[]; next: number | null }>;
  /**
   * One bounded step of the retention purge (docs/operations.md "Webhooks"): takes up to `limit`
   * events after sequence `after`, oldest first, up to the first one written at or after `before`;
   * deletes their deliveries delivered before `before`, then those of the events that were fanned
   * out and have no delivery left. Pending and failed deliveries, and their events, stay; so does
   * the newest event (SQLite numbers a new event from it, docs/benchmarks.md "Webhooks"). `next`
   * is where the following step starts, or null when no older event is left.
   */
  pruneDelivered(before: Date, after: number, limit: number): Promise<PruneStep>;
  /**
   * Whether an event committed by any process waits to be fanned out: the worker's frequent, cheap
   * look (one page of a partial index), so that a new event goes out without waiting for a sweep.
   */
  hasNewEvents(): Promise<boolean>;
}

/** Deliveries answered 2xx, with the status each got, and when. */
export interface DeliveredMarks {
  marks: ReadonlyArray<{ id: string; status: number }>;
  at: Date;
}

/** What one step of the retention purge deleted, and where the next one starts (null: done). */
export interface PruneStep {
  deliveries: number;
  events: number;
  next: number | null;
}

/**
 * Among `rows` (events after the previous step, oldest first, at most `limit`): the sequence range
 * of the leading ones written before `before`, and whether the purge goes on after it.
 */
export function pruneRange(
  rows: ReadonlyArray<{ seq: number; at: number }>,
  before: number,
  limit: number,
): { first: number; last: number; more: boolean } | undefined {
  let n = 0;
  while (n < rows.length && rows[n]!.at < before) n++;
  if (n === 0) return undefined;
  return { first: rows[0]!.seq, last: rows[n - 1]!.seq, more: n === rows.length && rows.length === limit };
}

/** The `purpose` a sealed webhook secret is bound to (src/keys/sealed-key.ts), with the endpoint id as its kid. */
export const WEBHOOK_SECRET_PURPOSE = 'webhook-secret';

/** A new delivery id: the `webhook-id` of every attempt of one event to one endpoint. */
export const newWebhookDeliveryId = (): string => `msg_${uuidv7()}`;

/** Whether an endpoint subscribed to `events` (a list of types, or `['*']`) receives `type`. */
export const subscribes = (events: readonly string[], type: string): boolean =>
  events.includes('*') || events.includes(type);
