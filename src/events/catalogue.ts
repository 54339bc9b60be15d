/**
 * The webhook event catalogue (docs/operations.md "Webhooks"): every event type and the fields of
 * its `data`. The admin API accepts these names in an endpoint's `events`, and the docs document
 * exactly these (a test holds the two together). `data` never holds claim values, ciphertext, keys
 * or tokens. How to add a type: docs/architecture.md "How to add an event".
 */

/** A status list entry of a credential: its list's URI and its index in it. */
export interface EventStatusEntry {
  uri: string;
  idx: number;
}

/** The `data` of each event type, field by field, in the order they are written. */
export interface WebhookEventData {
  'credential.issued': {
    credentialId: string;
    schemaId: string;
    proofType: string;
    channel: string;
    holderDid: string | undefined;
    revocationNonce: number;
    /** Only when the credential has a status list entry. */
    status?: EventStatusEntry;
    expiresAt: string;
  };
  'credential.delivered': { credentialId: string; storagePath: string | null; attempts: number };
  'credential.delivery_failed': { credentialId: string; attempts: number; lastError: string };
  'credential.revoked': StatusChangeData;
  'credential.suspended': StatusChangeData;
  'credential.unsuspended': StatusChangeData;
  'credential.renewed': { credentialId: string; renewedFrom: string; schemaId: string };
  'credential.deferred': {
    credentialId: string;
    schemaId: string;
    channel: string;
    holderDid: string;
    transactionExpiresAt: string;
    interval: number;
  };
  'credential.wallet_accepted': WalletNotificationData;
  'credential.wallet_failure': WalletNotificationData;
  'credential.wallet_deleted': WalletNotificationData;
  'key.rotated': { purpose: string; kid: string; retiredKid: string | null };
  'key.compromised': { kid: string; actor: string; reason: string | undefined };
  'status_list.published': { partition: number; uri: string };
}

/** The `data` of a wallet's notification (OpenID4VCI 1.0 §11) about a credential it received. */
export interface WalletNotificationData {
  credentialId: string;
  schemaId: string;
  /** The wallet's `event_description`, only when it sent one. */
  eventDescription?: string;
}

/** The `data` of a status change event. */
export interface StatusChangeData {
  credentialId: string;
  revocationNonce: number;
  actor: string | null;
  reason: string | null;
  /** Only when a bulk status change job made the change. */
  jobId?: string;
}

/**
 * Every webhook event type and the names of its `data` fields: the one list of them
 * (`WebhookEventData` gives their types).
 */
export const WEBHOOK_EVENTS = {
  'credential.issued': [
    'credentialId',
    'schemaId',
    'proofType',
    'channel',
    'holderDid',
    'revocationNonce',
    'status',
    'expiresAt',
  ],
  'credential.delivered': ['credentialId', 'storagePath', 'attempts'],
  'credential.delivery_failed': ['credentialId', 'attempts', 'lastError'],
  'credential.revoked': ['credentialId', 'revocationNonce', 'actor', 'reason', 'jobId'],
  'credential.suspended': ['credentialId', 'revocationNonce', 'actor', 'reason', 'jobId'],
  'credential.unsuspended': ['credentialId', 'revocationNonce', 'actor', 'reason', 'jobId'],
  'credential.renewed': ['credentialId', 'renewedFrom', 'schemaId'],
  'credential.deferred': [
    'credentialId',
    'schemaId',
    'channel',
    'holderDid',
    'transactionExpiresAt',
    'interval',
  ],
  'credential.wallet_accepted': ['credentialId', 'schemaId', 'eventDescription'],
  'credential.wallet_failure': ['credentialId', 'schemaId', 'eventDescription'],
  'credential.wallet_deleted': ['credentialId', 'schemaId', 'eventDescription'],
  'key.rotated': ['purpose', 'kid', 'retiredKid'],
  'key.compromised': ['kid', 'actor', 'reason'],
  'status_list.published': ['partition', 'uri'],
} as const satisfies { [T in keyof WebhookEventData]: ReadonlyArray<keyof WebhookEventData[T]> };

export type WebhookEventType = keyof typeof WEBHOOK_EVENTS;

/** The event types, in the order of `WEBHOOK_EVENTS`. */
export const WEBHOOK_EVENT_TYPES = Object.keys(WEBHOOK_EVENTS) as WebhookEventType[];

/**
 * A built event, as the stores receive and write it beside its change: `data` is its JSON, made by
 * a builder of builders.ts and written as it is.
 */
export interface NewWebhookEvent {
  id: string;
  type: WebhookEventType;
  data: string;
}
