import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../model.js';
import type { NamedLockStore } from '../store/store.js';
import type { WebhookStore } from '../store/webhook-store.js';

/** The purge's lock, and its lease (renewed at each step). */
const PRUNE_LOCK = 'webhook-prune';
const PRUNE_LEASE_MS = 60_000;
/** The pause between two purge steps, so that the purge never holds the database's writes for long. */
const PRUNE_PAUSE_MS = 20;

export interface PruneOptions {
  /** WEBHOOK_RETENTION_DAYS in ms; 0 keeps everything. */
  retentionMs: number;
  /** Events per purge step (default 200). */
  batch?: number | undefined;
  /** Shared by every process on the database: one purge at a time among them. */
  locks?: NamedLockStore | undefined;
  log?: Logger | undefined;
}

/**
 * The retention purge (docs/operations.md "Webhooks"): deletes delivered deliveries older than the
 * retention, and the events left with no delivery, a bounded step (one short transaction) at a
 * time, pausing between steps so that other writes go in between. Failed and pending deliveries
 * stay. One purge at a time among the processes sharing `locks` (another's running purge: this one
 * does nothing); `running() === false` ends a purge after the current step, and the next run goes
 * on from the oldest event.
 */
export class WebhookPruner {
  private pruning: Promise<{ deliveries: number; events: number }> | undefined;

  constructor(
    private readonly store: WebhookStore,
    private readonly options: PruneOptions,
    private readonly running: () => boolean,
  ) {}

  /** The purge under way, if any, settled either way. */
  async settled(): Promise<void> {
    await this.pruning?.catch(() => undefined);
  }

  /** One purge (the one under way, when there is one); `now`: the clock the age is measured against. */
  prune(now = new Date()): Promise<{ deliveries: number; events: number }> {
    if (this.pruning) return this.pruning;
    const total = { deliveries: 0, events: 0 };
    if (this.options.retentionMs <= 0) return Promise.resolve(total);
    const before = new Date(now.getTime() - this.options.retentionMs);
    const locks = this.options.locks;
    const owner = randomUUID();
    this.pruning = (async () => {
      let locked = false;
      try {
        let after: number | null = 0;
        while (after !== null && this.running()) {
          if (locks) {
            // Taken, then renewed at each step, so that a long purge keeps it; released at the end.
            locked = locked
              ? await locks.renew(PRUNE_LOCK, owner, PRUNE_LEASE_MS)
              : await locks.tryAcquire(PRUNE_LOCK, owner, PRUNE_LEASE_MS);
            if (!locked) break;
          }
          const step = await this.store.pruneDelivered(before, after, this.options.batch ?? 200);
          total.deliveries += step.deliveries;
          total.events += step.events;
          after = step.next;
          if (after !== null) await delay(PRUNE_PAUSE_MS);
        }
      } catch (err) {
        this.options.log?.error(
          { event: 'webhook_prune_error', err },
          'webhook retention purge failed; retried at the next run',
        );
        throw err;
      } finally {
        if (locked) await locks?.release(PRUNE_LOCK, owner).catch(() => undefined);
        this.pruning = undefined;
        if (total.deliveries + total.events > 0)
          this.options.log?.info(
            { event: 'webhook_pruned', ...total, before: before.toISOString() },
            'old webhook deliveries deleted',
          );
      }
      return total;
    })();
    return this.pruning;
  }
}
