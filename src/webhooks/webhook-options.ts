import type { Logger } from '../model.js';
import type { NamedLockStore } from '../store/store.js';
import type { EndpointPolicy } from './endpoint-address.js';

export interface WebhookOptions {
  policy: EndpointPolicy;
  /** Seals secrets at rest (PostgreSQL, like the keys); undefined: stored as they are. */
  kek: Buffer | undefined;
  /** WEBHOOK_MAX_ATTEMPTS: attempts before a delivery is `failed`. */
  maxAttempts: number;
  /** Retry delays: doubling from `baseBackoffMs` up to `maxBackoffMs`, with jitter. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** The sweep interval, shared with the upload outbox (OUTBOX_SWEEP_MS). */
  sweepMs: number;
  /** Sweeps back off up to this while nothing comes from outside (LeasedSweeper; default: they do not). */
  idleSweepMaxMs?: number | undefined;
  leaseMs?: number;
  batchSize?: number;
  /**
   * WEBHOOK_RETENTION_DAYS in ms: delivered deliveries, and events with no delivery left, older
   * than this are deleted; 0 keeps them. Default 30 days.
   */
  retentionMs?: number;
  /** How often the purge runs (default hourly), and the events per purge step (default 200). */
  pruneEveryMs?: number;
  pruneBatch?: number;
  /** How often the worker looks for new events between sweeps (default `NEW_EVENT_LOOK_MS`). */
  lookMs?: number;
  /**
   * Looks back off up to this while they find nothing (default: they do not): after three empty
   * looks each wait doubles; a look that finds an event brings it back to `lookMs`.
   */
  lookIdleMaxMs?: number | undefined;
  /** How long a receiver has to answer (default `DELIVERY_TIMEOUT_MS`, docs/operations.md "Webhooks"). */
  deliveryTimeoutMs?: number;
  /** Shared by every process on the database: one purge at a time among them. */
  locks?: NamedLockStore | undefined;
  log?: Logger;
}

/**
 * The worker's look for new events: a committed event goes out within about this long, from
 * whichever process wrote it (another instance, a worker, the admin CLI), instead of at the next
 * sweep. One index page per look. Not LISTEN/NOTIFY: PostgreSQL serialises the commits of every
 * transaction that notifies (a lock held through the commit's WAL flush), and the kit's writes of
 * every instance would then commit one at a time.
 */
export const NEW_EVENT_LOOK_MS = 250;

/** WEBHOOK_RETENTION_DAYS' default. */
export const DEFAULT_RETENTION_DAYS = 30;
