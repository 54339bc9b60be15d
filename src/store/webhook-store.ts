import { randomUUID } from 'node:crypto';
import type { AuditActor, StatusChange } from '../model.js';
/**
 * Webhook endpoints, the event outbox and its deliveries (docs/operations.md "Webhooks"). Events
 * are written by the issuance and status stores in the transaction of the change they report,
 * while at least one endpoint exists; a worker fans each event out to one delivery per subscribed
 * endpoint, then delivers under a lease like the upload outbox.
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

/** An event written beside its change: `data` is its JSON, never claim values or secrets. */
export interface NewWebhookEvent {
  id: string;
  type: string;
  data: string;
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
  /** Takes up to `limit` due deliveries for `leaseMs` (one instance at a time each). */
  leaseDueDeliveries(now: Date, leaseMs: number, limit: number): Promise<WebhookDeliveryRecord[]>;
  markDelivered(id: string, status: number, at: Date): Promise<void>;
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
  countFailedDeliveries(): Promise<number>;
  /** An endpoint's deliveries, newest first. */
  listDeliveries(
    endpointId: string,
    state: WebhookDeliveryState | undefined,
    limit: number,
  ): Promise<WebhookDeliveryRecord[]>;
}

/** The `purpose` a sealed webhook secret is bound to (src/keys/sealed-key.ts), with the endpoint id as its kid. */
export const WEBHOOK_SECRET_PURPOSE = 'webhook-secret';

/** A new event id. */
export const newWebhookEventId = (): string => `evt_${randomUUID()}`;

export const STATUS_EVENT_TYPE: Record<StatusChange, string> = {
  revoke: 'credential.revoked',
  suspend: 'credential.suspended',
  unsuspend: 'credential.unsuspended',
};

/** The event of a status change that changed something (docs/operations.md "Webhooks"). */
export function statusChangeEvent(
  record: { credentialId: string; revocationNonce: number },
  change: StatusChange,
  audit: AuditActor | undefined,
): NewWebhookEvent {
  return {
    id: newWebhookEventId(),
    type: STATUS_EVENT_TYPE[change],
    data: JSON.stringify({
      credentialId: record.credentialId,
      revocationNonce: record.revocationNonce,
      actor: audit?.actor ?? null,
      reason: audit?.reason ?? null,
      ...(audit?.jobId ? { jobId: audit.jobId } : {}),
    }),
  };
}
