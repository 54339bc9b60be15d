import { EventEmitter } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../model.js';
import { type ServiceClient, UpstreamError } from '../service-client/service-client.js';
import type { IssuanceRecord, IssuanceStore } from '../store/store.js';
import { LeasedSweeper } from '../workers/leased-sweeper.js';
import { backoffWithJitter } from './backoff.js';

export interface OutboxOptions {
  /**
   * First retry delay; doubles per failure, capped at `maxBackoffMs` (30 s by default; docs/interface.md
   * "Decisions where the hosting service's interface is silent").
   */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** How long a worker owns an upload before another may take it over (UPLOAD_LEASE_MS). */
  leaseMs?: number;
  /**
   * How often the worker looks in the store for due uploads it was not told about (OUTBOX_SWEEP_MS,
   * default 5 s): another instance's retries, uploads left by an instance that died (taken once
   * their lease expires), and pending uploads without the due time the store's reads find
   * (`repairUnseenUploads`). When nothing is due: one indexed query on SQLite, two on PostgreSQL.
   */
  sweepMs?: number;
  /** Sweeps back off up to this while nothing comes from outside (LeasedSweeper; default: they do not). */
  idleSweepMaxMs?: number | undefined;
  batchSize?: number;
  /** Attempts before an upload becomes `failed` (UPLOAD_MAX_ATTEMPTS, default 10). */
  maxAttempts?: number;
  /**
   * Attempts before giving up when the hosting service refuses for good (a 4xx other than 408 and
   * 429: retrying the same envelope cannot change its answer). Default 3, at most `maxAttempts`.
   */
  maxRefusedAttempts?: number;
  log?: Logger;
}

/** What starts a drain: a sweep (the interval), the start (`repair`), or neither (a wake, a retry due). */
interface DrainOptions {
  sweep?: boolean;
  repair?: boolean;
}

/** How often a request waiting on another process's upload of the same credential looks again. */
const FOREIGN_UPLOAD_POLL_MS = 50;

export interface OutboxEvents {
  uploaded: [record: IssuanceRecord, storagePath: string | null];
  failed: [record: IssuanceRecord, error: Error, nextAttemptAt: Date];
  /** The upload became `failed`: no more attempts until `retryFailed` (metrics count this). */
  gave_up: [record: IssuanceRecord, error: Error, attempts: number];
}

/**
 * The durable upload outbox. Every issuance is committed before its upload, with its envelope,
 * which the store keeps until the upload is marked done; an upload that fails stays pending with
 * its envelope and is retried with the same externalId,
 * with exponential backoff capped at 30 s, also after a restart, for a bounded number of
 * attempts; then it is `failed` until an admin retries it (`npm run admin -- uploads retry`).
 */
export class UploadOutbox extends EventEmitter<OutboxEvents> {
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  private readonly sweepMs: number;
  private readonly maxAttempts: number;
  private readonly maxRefusedAttempts: number;
  /** This process's running attempt per credential, shared by identical concurrent requests. */
  private readonly attempts = new Map<string, Promise<string | null>>();
  /** The worker's loop: a drain every `sweepMs` (a sweep), on a wake, and at the next upload due. */
  private readonly loop: LeasedSweeper<void, DrainOptions>;
  /** A sweep (or the start) asked for repairUnseenUploads and no drain has run it since. */
  private repairOwed = false;
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
    this.sweepMs = Math.max(1, options.sweepMs ?? 5000);
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 10);
    this.maxRefusedAttempts = Math.min(this.maxAttempts, Math.max(1, options.maxRefusedAttempts ?? 3));
    this.loop = new LeasedSweeper(
      (drain) => this.drainPass(drain),
      this.sweepMs,
      () => this.drain({ sweep: true }),
      options.idleSweepMaxMs,
    );
  }

  /**
   * Starts the worker. With `recover` (a process starting alone) every pending upload is retried at
   * once and leases left by a dead process drop; without it (a worker joining live siblings) their
   * leases are kept and due uploads are taken as usual. Either way the worker then sweeps the
   * store every `sweepMs`: the store is shared, and no other instance's work reaches this one as
   * an event.
   */
  async start(options: { recover?: boolean } = {}): Promise<void> {
    this.loop.start();
    if (options.recover ?? true) await this.store.makePendingDue(new Date());
    await this.drain({ repair: true });
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await Promise.allSettled([...this.inFlight]);
  }

  /**
   * The upload of one credential inside a request, under the same lease as the worker. Resolves
   * with the storage path, or rejects after recording the failure and scheduling the retry.
   * `leased`: the caller has just inserted the record, whose insert took the lease (store.ts
   * `uploadDueAt`). When another request of this process is uploading the same credential
   * (identical concurrent issue-vc), waits for that attempt; when another process holds the lease,
   * looks at the record until it is uploaded or `deadline` (epoch ms) passes, taking the lease if
   * it is released.
   */
  async uploadNow(
    record: IssuanceRecord,
    options: { leased?: boolean; deadline?: number } = {},
  ): Promise<string | null> {
    const id = record.credentialId;
    const deadline = options.deadline ?? Date.now();
    const leasedByInsert = options.leased === true;
    for (;;) {
      const running = this.attempts.get(id);
      if (running && !leasedByInsert) return running;
      if (leasedByInsert || (await this.store.leaseUpload(id, new Date(), this.leaseMs))) {
        // Registered before any await, so a concurrent caller of this process finds it.
        const attempt = this.track(this.attempt(record)).finally(() => this.attempts.delete(id));
        this.attempts.set(id, attempt);
        return attempt;
      }
      const current = await this.store.get(id);
      if (current?.uploadState === 'uploaded') return current.storagePath;
      if (current?.uploadState === 'failed')
        throw new Error(`the upload was given up (${current.lastError ?? 'refused'}); see uploads retry`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('upload is being retried by the background worker');
      // Another process's lease: no event reaches this one, so its record is looked at again.
      await delay(Math.min(FOREIGN_UPLOAD_POLL_MS, left));
    }
  }

  /**
   * Puts `failed` uploads back in the queue (attempts from 0) and wakes the worker. Returns the
   * credential ids resumed; an id that is not `failed` is left alone.
   */
  async retryFailed(credentialIds: string[] | 'all'): Promise<string[]> {
    const resumed = await this.store.retryFailedUploads(credentialIds, new Date());
    if (resumed.length > 0) void this.drain();
    return resumed;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => {});
    return p;
  }

  private async attempt(record: IssuanceRecord): Promise<string | null> {
    try {
      const envelope = record.envelope;
      let res: { storagePath?: string | undefined };
      if (envelope)
        res = await this.client.storeEnvelope(envelope, record.proofType, record.uploadAttempts + 1);
      // Delivered once (its envelope deleted then, docs/architecture.md "Envelopes until delivered")
      // and put back in the queue since: the hosting service has it, and the mark is made again.
      else if (record.uploadedAt) res = { storagePath: record.storagePath ?? undefined };
      // Never delivered and no envelope (an oid4vci credential is never pending): recorded as a
      // failure, so that it ends `failed` where doctor and the metrics show it, never marked uploaded.
      else throw new Error(`credential ${record.credentialId} has no envelope to upload`);
      const storagePath = res.storagePath ?? null;
      await this.store.markUploaded(record.credentialId, storagePath, new Date());
      this.emit('uploaded', record, storagePath);
      return storagePath;
    } catch (err) {
      const error = err as Error;
      const refused = error instanceof UpstreamError && !error.retryable;
      const next = new Date(
        Date.now() + backoffWithJitter(record.uploadAttempts + 1, this.baseBackoffMs, this.maxBackoffMs),
      );
      const { attempts, gaveUp } = await this.store.markUploadFailed(
        record.credentialId,
        error.message.slice(0, 500),
        next,
        refused ? this.maxRefusedAttempts : this.maxAttempts,
      );
      // The observer (src/observability/observer.ts) logs and counts both outcomes.
      if (gaveUp) {
        this.emit('gave_up', record, error, attempts);
        throw error;
      }
      this.emit('failed', record, error, next);
      this.loop.runAt(next);
      throw error;
    }
  }

  /** The store's `repairUnseenUploads`, owed by a sweep (or the start) and paid once. */
  private async repairUnseen(): Promise<void> {
    this.repairOwed = false;
    const repaired = await this.store.repairUnseenUploads(new Date());
    // An instance of a version before PostgreSQL migration 023 requeued these (store.ts).
    if (repaired > 0)
      this.options.log?.warn(
        { event: 'outbox_unseen_repaired', count: repaired },
        'pending uploads without a due time in the outbox were made due',
      );
  }

  /**
   * Takes due uploads batch by batch until none is left, then sets the timer for the next one due.
   * A `sweep` (and, with `repair`, the first drain) first gives a due time to pending uploads the
   * store's reads miss. A sweep that fires while a drain runs joins it and owes its repair, which
   * that drain runs before its next batch (or the next drain does), so a long drain of a backlog
   * leaves no sweep's repair undone. A sweep that finds nothing due stops there: its queries (one
   * on SQLite, two on PostgreSQL) are the whole cost of an idle sweep, and the next sweep comes
   * soon enough for what is due later.
   */
  private drain(options: DrainOptions = {}): Promise<void> {
    if (options.sweep || options.repair) this.repairOwed = true;
    return this.loop.run(options);
  }

  /** One drain (`drain`'s; the loop runs one at a time). */
  private async drainPass(options: DrainOptions = {}): Promise<void> {
    try {
      for (let took = false; ; took = true) {
        if (!this.loop.running) return;
        if (this.repairOwed) await this.repairUnseen();
        const batch = await this.store.leaseDueUploads(new Date(), this.leaseMs, this.batchSize);
        if (batch.length === 0) {
          if (options.sweep && !took) return;
          break;
        }
        await Promise.allSettled(batch.map((r) => this.track(this.attempt(r))));
      }
      const next = await this.store.nextUploadDue();
      if (next) this.loop.runAt(next);
    } catch (err) {
      this.options.log?.error({ event: 'outbox_error', err }, 'outbox worker failed; retrying');
      this.loop.runAt(new Date(Date.now() + this.baseBackoffMs));
    }
  }
}
