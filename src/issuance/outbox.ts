import { EventEmitter } from 'node:events';
import type { ServiceClient } from '../service-client/service-client.js';
import type { IssuanceRecord, IssuanceStore } from '../store/store.js';

export interface OutboxOptions {
  /** First retry delay; doubles per failure, capped at `maxBackoffMs` (issue: 30 s). */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** How long a worker owns an upload before another may take it over. */
  leaseMs?: number;
  batchSize?: number;
  log?: (line: string) => void;
}

export interface OutboxEvents {
  uploaded: [record: IssuanceRecord, storagePath: string | null];
  failed: [record: IssuanceRecord, error: Error, nextAttemptAt: Date];
}

/**
 * The durable upload outbox (DESIGN §9). Every issuance is committed before its upload; an
 * upload that fails stays pending with its envelope and is retried with the same externalId,
 * with exponential backoff capped at 30 s, also after a restart.
 */
export class UploadOutbox extends EventEmitter<OutboxEvents> {
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private draining: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly store: IssuanceStore,
    private readonly client: ServiceClient,
    private readonly options: OutboxOptions = {},
  ) {
    super();
    this.baseBackoffMs = options.baseBackoffMs ?? 1000;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.batchSize = options.batchSize ?? 32;
  }

  /** Starts the worker; every pending upload is retried at once. */
  start(): Promise<void> {
    this.running = true;
    return this.store.makePendingDue(new Date()).then(() => this.drain());
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.draining;
    await Promise.allSettled([...this.inFlight]);
  }

  /**
   * One attempt now (inside the request), under the same lease as the worker. Resolves with the
   * storage path, or rejects after recording the failure and scheduling the retry.
   */
  async uploadNow(record: IssuanceRecord): Promise<string | null> {
    const leased = await this.store.leaseUpload(record.credentialId, new Date(), this.leaseMs);
    if (!leased) {
      const current = await this.store.get(record.credentialId);
      if (current?.uploadState === 'uploaded') return current.storagePath;
      throw new Error('upload is being retried by the background worker');
    }
    return this.track(this.attempt(record));
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => {});
    return p;
  }

  private async attempt(record: IssuanceRecord): Promise<string | null> {
    try {
      const res = await this.client.storeEnvelope(record.envelope);
      const storagePath = res.storagePath ?? null;
      await this.store.markUploaded(record.credentialId, storagePath, new Date());
      this.emit('uploaded', record, storagePath);
      return storagePath;
    } catch (err) {
      const error = err as Error;
      const attempts = record.uploadAttempts + 1;
      const delay = Math.min(this.maxBackoffMs, this.baseBackoffMs * 2 ** (attempts - 1));
      // ±20 % jitter so a fleet of pending uploads does not retry in lock-step.
      const next = new Date(Date.now() + Math.round(delay * (0.8 + Math.random() * 0.4)));
      await this.store.markUploadFailed(record.credentialId, error.message.slice(0, 500), next);
      this.options.log?.(
        `upload ${record.credentialId} failed (attempt ${attempts}): ${error.message}; retry at ${next.toISOString()}`,
      );
      this.emit('failed', record, error, next);
      this.schedule(next);
      throw error;
    }
  }

  private schedule(at: Date): void {
    if (!this.running) return;
    const delay = Math.max(0, at.getTime() - Date.now());
    if (this.timer && this.timerAt !== undefined && this.timerAt <= at.getTime()) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at.getTime();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = undefined;
      void this.drain();
    }, delay);
    this.timer.unref();
  }
  private timerAt: number | undefined;

  private drain(): Promise<void> {
    if (this.draining) return this.draining;
    this.draining = (async () => {
      try {
        for (;;) {
          if (!this.running) return;
          const batch = await this.store.leaseDueUploads(new Date(), this.leaseMs, this.batchSize);
          if (batch.length === 0) break;
          await Promise.allSettled(batch.map((r) => this.track(this.attempt(r))));
        }
        const next = await this.store.nextUploadDue();
        if (next) this.schedule(next);
      } catch (err) {
        this.options.log?.(`outbox: ${(err as Error).message}`);
        this.schedule(new Date(Date.now() + this.baseBackoffMs));
      } finally {
        this.draining = undefined;
      }
    })();
    return this.draining;
  }
}
