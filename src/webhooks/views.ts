import type {
  WebhookDeliveryRecord,
  WebhookDeliveryState,
  WebhookEndpointRecord,
} from '../store/webhook-store.js';

/** An endpoint as the admin API shows it: never its secret. */
export interface WebhookEndpointView {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  createdAt: string;
}

/** A delivery as the admin API shows it. */
export interface WebhookDeliveryView {
  id: string;
  eventId: string;
  type: string;
  sequence: number;
  state: WebhookDeliveryState;
  attempts: number;
  nextAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  createdAt: string;
}

export const deliveryView = (d: WebhookDeliveryRecord): WebhookDeliveryView => ({
  id: d.id,
  eventId: d.eventId,
  type: d.type,
  sequence: d.sequence,
  state: d.state,
  attempts: d.attempts,
  nextAttemptAt: d.nextAttemptAt?.toISOString() ?? null,
  lastStatus: d.lastStatus,
  lastError: d.lastError,
  deliveredAt: d.deliveredAt?.toISOString() ?? null,
  createdAt: d.createdAt.toISOString(),
});

export const endpointView = (e: WebhookEndpointRecord): WebhookEndpointView => ({
  id: e.id,
  url: e.url,
  events: e.events,
  description: e.description,
  createdAt: e.createdAt.toISOString(),
});
