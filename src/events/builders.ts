import { v7 as uuidv7 } from 'uuid';
import type { AuditActor, StatusChange } from '../model.js';
import type {
  NewWebhookEvent,
  StatusChangeData,
  WalletNotificationData,
  WebhookEventData,
  WebhookEventType,
} from './catalogue.js';

/**
 * One builder per event type (docs/operations.md "Webhooks"): the only code that makes an event's
 * `data`. Each writes its fields in the order of `WEBHOOK_EVENTS`; a field whose value is
 * `undefined` is left out, as JSON does.
 */

/** A new event id. */
export const newWebhookEventId = (): string => `evt_${uuidv7()}`;

function event<T extends WebhookEventType>(type: T, data: WebhookEventData[T]): NewWebhookEvent {
  return { id: newWebhookEventId(), type, data: JSON.stringify(data) };
}

export const STATUS_EVENT_TYPE = {
  revoke: 'credential.revoked',
  suspend: 'credential.suspended',
  unsuspend: 'credential.unsuspended',
} as const satisfies Record<StatusChange, WebhookEventType>;

/** `credential.issued`: written with the issuance. */
export function credentialIssuedEvent(d: WebhookEventData['credential.issued']): NewWebhookEvent {
  return event('credential.issued', {
    credentialId: d.credentialId,
    schemaId: d.schemaId,
    proofType: d.proofType,
    channel: d.channel,
    holderDid: d.holderDid,
    revocationNonce: d.revocationNonce,
    ...(d.status ? { status: { uri: d.status.uri, idx: d.status.idx } } : {}),
    expiresAt: d.expiresAt,
  });
}

/** `credential.delivered`: the upload's "uploaded" mark, `attempts` counting it. */
export function credentialDeliveredEvent(
  credentialId: string,
  storagePath: string | null,
  attempts: number,
): NewWebhookEvent {
  return event('credential.delivered', { credentialId, storagePath, attempts });
}

/** `credential.delivery_failed`: the upload was given up after `attempts`. */
export function credentialDeliveryFailedEvent(
  credentialId: string,
  attempts: number,
  lastError: string,
): NewWebhookEvent {
  return event('credential.delivery_failed', { credentialId, attempts, lastError });
}

/** The event of a status change that changed something; `jobId` only from a bulk status change job. */
export function statusChangeEvent(
  record: { credentialId: string; revocationNonce: number },
  change: StatusChange,
  audit: AuditActor | undefined,
): NewWebhookEvent {
  const data: StatusChangeData = {
    credentialId: record.credentialId,
    revocationNonce: record.revocationNonce,
    actor: audit?.actor ?? null,
    reason: audit?.reason ?? null,
    ...(audit?.jobId ? { jobId: audit.jobId } : {}),
  };
  return event(STATUS_EVENT_TYPE[change], data);
}

/** `credential.renewed`: `credentialId` is the new credential, `renewedFrom` the one it renews. */
export function credentialRenewedEvent(
  credentialId: string,
  renewedFrom: string,
  schemaId: string,
): NewWebhookEvent {
  return event('credential.renewed', { credentialId, renewedFrom, schemaId });
}

/**
 * `credential.deferred`: an OpenID4VCI credential waits for its claims (OpenID4VCI 1.0 §9);
 * `credentialId` is the id it will have, `transactionExpiresAt` when the wallet's transaction lapses.
 */
export function credentialDeferredEvent(d: WebhookEventData['credential.deferred']): NewWebhookEvent {
  return event('credential.deferred', {
    credentialId: d.credentialId,
    schemaId: d.schemaId,
    channel: d.channel,
    holderDid: d.holderDid,
    transactionExpiresAt: d.transactionExpiresAt,
    interval: d.interval,
  });
}

/** The wallet's notification events (OpenID4VCI 1.0 §11), by the `event` it sent. */
export const WALLET_NOTIFICATION_EVENT_TYPE = {
  credential_accepted: 'credential.wallet_accepted',
  credential_failure: 'credential.wallet_failure',
  credential_deleted: 'credential.wallet_deleted',
} as const satisfies Record<string, WebhookEventType>;

export type WalletNotification = keyof typeof WALLET_NOTIFICATION_EVENT_TYPE;

/** `credential.wallet_accepted`, `credential.wallet_failure` or `credential.wallet_deleted`. */
export function walletNotificationEvent(
  notification: WalletNotification,
  d: WalletNotificationData,
): NewWebhookEvent {
  return event(WALLET_NOTIFICATION_EVENT_TYPE[notification], {
    credentialId: d.credentialId,
    schemaId: d.schemaId,
    ...(d.eventDescription === undefined ? {} : { eventDescription: d.eventDescription }),
  });
}

/** The `key.rotated` event of a rotation of `purpose` that made `kid` sign and retired `retired`. */
export function keyRotatedEvent(purpose: string, kid: string, retired: readonly string[]): NewWebhookEvent {
  return event('key.rotated', { purpose, kid, retiredKid: retired[0] ?? null });
}

/** `key.compromised`: the key is no longer published. */
export function keyCompromisedEvent(kid: string, actor: AuditActor): NewWebhookEvent {
  return event('key.compromised', { kid, actor: actor.actor, reason: actor.reason });
}

/** `status_list.published`: a newly signed status list token of `partition`, served at `uri`. */
export function statusListPublishedEvent(partition: number, uri: string): NewWebhookEvent {
  return event('status_list.published', { partition, uri });
}
