import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import type { AuditActor, Logger, StatusChange } from '../model.js';
import {
  type ExternalItem,
  jobAudit,
  type StatusJobRecord,
  type StatusJobSelector,
  type StatusJobStore,
} from '../store/status-job-store.js';
import type { StatusChangeRequest, StatusStore } from '../store/store.js';
import { LeasedSweeper } from '../workers/leased-sweeper.js';
import type { StatusService } from './status-service.js';

/**
 * Revokes many credentials of a back-end that keeps its own revocation registry (Iden3) with one
 * new state, each of `changes` (the records' revocations, audited) committing with it. Answers how
 * many entered the registry (0: all were there already, and nothing was applied).
 */
export type BulkExternalRevoker = (items: ExternalItem[], changes: StatusChangeRequest[]) => Promise<number>;

export interface StatusJobsOptions {
  store: StatusJobStore;
  /** Single status changes (what an external back-end left unapplied). */
  statusStore: StatusStore;
  status: StatusService;
  externalRevokers?: Map<string, BulkExternalRevoker> | undefined;
  /** How long a runner holds a job between chunks before another instance may take it. */
  leaseMs?: number;
  /** How often every instance looks for a job nobody holds (a runner that died). */
  sweepMs?: number;
  /** Sweeps back off up to this while nothing comes from outside (LeasedSweeper; default: they do not). */
  idleSweepMaxMs?: number | undefined;
  /** Credentials per transaction. */
  chunkSize?: number;
  /** Failed runs before the job is `failed`. */
  maxRuns?: number;
  log?: Logger | undefined;
  now?: () => Date;
}

/** What a finished run measured (the bench and the log line). */
export interface JobRunReport {
  jobId: string;
  state: StatusJobRecord['state'];
  total: number;
  done: number;
  failed: number;
  /** Seconds spent changing statuses (the chunks, and the Iden3 state). */
  changeSeconds: number;
  /** Seconds spent publishing the touched partitions at the end. */
  publishSeconds: number;
  partitions: number;
}

/**
 * Bulk status changes (docs/operations.md "Bulk status changes"). A job is created with its
 * selection, then worked through by whichever instance holds its lease: the one that created it,
 * or after that one died, any instance's sweep. Each chunk is one transaction that also moves the
 * job's cursor, so a crash repeats no change and loses none. At the end, the credentials of a
 * back-end with its own registry (Iden3) are revoked with one new state, and every status list
 * partition the job touched is published once.
 */
export class StatusJobs extends EventEmitter<{ changed: [] }> {
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly leaseMs: number;
  private readonly sweepMs: number;
  private readonly chunkSize: number;
  private readonly maxRuns: number;
  private readonly running = new Map<string, Promise<JobRunReport | undefined>>();
  /** A sweep every `sweepMs` once started, one at a time. */
  private readonly loop: LeasedSweeper<Array<Promise<JobRunReport | undefined>>>;
  private stopping = false;

  constructor(private readonly deps: StatusJobsOptions) {
    super();
    this.leaseMs = deps.leaseMs ?? 30_000;
    this.sweepMs = Math.max(1, deps.sweepMs ?? 5000);
    this.chunkSize = Math.max(1, deps.chunkSize ?? 1000);
    this.maxRuns = Math.max(1, deps.maxRuns ?? 5);
    this.loop = new LeasedSweeper(
      () => this.sweepOnce(),
      this.sweepMs,
      () => this.sweep(),
      deps.idleSweepMaxMs,
    );
  }

  /** How many credentials a selector matches now (a dry run changes nothing). */
  count(selector: StatusJobSelector): Promise<number> {
    return this.deps.store.count(selector);
  }

  /** Records a job with its selection and starts working it in this process. */
  async create(
    change: StatusChange,
    selector: StatusJobSelector,
    audit: AuditActor & { reason: string },
    expectedCount?: number,
  ): Promise<StatusJobRecord> {
    const job = await this.deps.store.create(
      {
        id: `sj_${randomUUID()}`,
        change,
        selector,
        reason: audit.reason,
        actor: audit.actor,
        createdAt: this.now(),
        expectedCount,
      },
      this.owner,
      this.leaseMs,
    );
    this.deps.log?.info(
      { event: 'status_job_created', jobId: job.id, change, total: job.total, actor: audit.actor },
      `status job ${job.id}: ${change} of ${job.total} credential(s)`,
    );
    if (!this.stopping) void this.runLeased(job.id);
    return job;
  }

  get(id: string): Promise<StatusJobRecord | undefined> {
    return this.deps.store.get(id);
  }

  /** Starts the sweep that takes over jobs whose runner died (their lease expired). */
  start(): void {
    this.stopping = false;
    this.loop.start();
    void this.sweep();
  }

  /** Stops taking work; a running job stops after its chunk and gives its lease up for others. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
    await Promise.allSettled([...this.running.values()]);
  }

  /** Takes over every running job nobody holds; answers the runs it started (a sweep under way is joined). */
  sweep(): Promise<Array<Promise<JobRunReport | undefined>>> {
    return this.loop.run();
  }

  private async sweepOnce(): Promise<Array<Promise<JobRunReport | undefined>>> {
    if (this.stopping) return [];
    let ids: string[];
    try {
      ids = await this.deps.store.unleasedJobs(10);
    } catch (err) {
      this.deps.log?.warn(
        { event: 'status_job_sweep_failed', error: (err as Error).message },
        'status job sweep failed',
      );
      return [];
    }
    const runs: Array<Promise<JobRunReport | undefined>> = [];
    for (const id of ids) {
      if (this.running.has(id)) continue;
      if (!(await this.deps.store.lease(id, this.owner, this.leaseMs).catch(() => false))) continue;
      this.deps.log?.info(
        { event: 'status_job_resumed', jobId: id },
        `status job ${id}: resumed by ${this.owner}`,
      );
      runs.push(this.runLeased(id));
    }
    return runs;
  }

  /** The run of a job this process holds the lease of (one at a time per job). */
  runLeased(id: string): Promise<JobRunReport | undefined> {
    const existing = this.running.get(id);
    if (existing) return existing;
    const run = this.work(id).finally(() => this.running.delete(id));
    this.running.set(id, run);
    return run;
  }

  private async work(id: string): Promise<JobRunReport | undefined> {
    const store = this.deps.store;
    const external = [...(this.deps.externalRevokers?.keys() ?? [])];
    const started = performance.now();
    const partitions = new Set<number>();
    try {
      for (;;) {
        if (this.stopping) {
          await store.releaseLease(id, this.owner);
          return undefined;
        }
        const chunk = await store.applyChunk(
          id,
          this.owner,
          this.leaseMs,
          this.chunkSize,
          external,
          this.now(),
        );
        // The lease went to another instance (this one stalled past it): that one goes on.
        if (!chunk) return undefined;
        // Its status changes are written, with their events (the tenants' webhook look listens).
        this.emit('changed');
        for (const p of chunk.partitions) partitions.add(p);
        if (chunk.finished) break;
        // Requests get their turn between chunks.
        await new Promise((resolve) => setImmediate(resolve));
      }
      const job = await store.get(id);
      if (!job) return undefined;
      if (job.change === 'revoke' && external.length > 0) await this.revokeExternal(job, external);
      const changeSeconds = (performance.now() - started) / 1000;
      // Every partition the selection lives in, not only this run's: a run before a crash may
      // have changed some and died before publishing.
      const touched = await store.partitions(id);
      const publishStarted = performance.now();
      await this.deps.status.publishPartitions(touched);
      const publishSeconds = (performance.now() - publishStarted) / 1000;
      if (!(await store.finish(id, this.owner, 'done', this.now()))) return undefined;
      const after = await store.get(id);
      const report: JobRunReport = {
        jobId: id,
        state: after?.state ?? 'done',
        total: after?.total ?? job.total,
        done: after?.done ?? 0,
        failed: after?.failed ?? 0,
        changeSeconds,
        publishSeconds,
        partitions: touched.length,
      };
      this.deps.log?.info(
        { event: 'status_job_done', ...report },
        `status job ${id}: ${report.done} done, ${report.failed} failed; ${touched.length} partition(s) published`,
      );
      return report;
    } catch (err) {
      const message = (err as Error).message;
      const runs = await store.recordFailure(id, this.owner, message).catch(() => 0);
      this.deps.log?.error(
        { event: 'status_job_run_failed', jobId: id, runs, error: message },
        `status job ${id}: run ${runs} failed (${message})`,
      );
      if (runs >= this.maxRuns && (await store.lease(id, this.owner, this.leaseMs).catch(() => false)))
        await store.finish(id, this.owner, 'failed', this.now(), message).catch(() => false);
      return undefined;
    }
  }

  /** The job's Iden3 credentials: one new state for all of them, each change audited with the job. */
  private async revokeExternal(job: StatusJobRecord, proofTypes: string[]): Promise<void> {
    const pending = await this.deps.store.pendingExternal(job.id, proofTypes);
    const audit = jobAudit(job);
    const at = this.now();
    for (const proofType of proofTypes) {
      const items = pending.filter((i) => i.proofType === proofType);
      if (items.length === 0) continue;
      const changes = items.map(
        (i): StatusChangeRequest => ({ nonce: i.revocationNonce, change: 'revoke', at, audit }),
      );
      await this.deps.externalRevokers!.get(proofType)!(items, changes);
    }
    // Already in the registry (a run that died after its state but not its records cannot happen,
    // both commit together; a nonce revoked by an earlier version can): the records follow.
    for (const item of await this.deps.store.pendingExternal(job.id, proofTypes))
      await this.deps.statusStore.changeStatus(item.revocationNonce, 'revoke', at, audit);
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }
}
