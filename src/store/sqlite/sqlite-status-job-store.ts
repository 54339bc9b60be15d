import { statusChangeEvent } from '../../events/builders.js';
import type { StatusChange } from '../../model.js';
import { type StatusJobColumns, type StatusJobItemColumns, statusJobFromRow } from '../status-job-row.js';
import {
  type ChunkOutcome,
  type ExternalItem,
  itemAction,
  jobAudit,
  type NewStatusJob,
  SelectionChanged,
  type StatusJobRecord,
  type StatusJobSelector,
  type StatusJobStore,
  selectorJson,
} from '../status-job-store.js';
import type { SqliteDatabase } from './database.js';
import { SqliteAuditStore } from './sqlite-audit-store.js';
import { SqliteWebhookStore } from './sqlite-webhook-store.js';

type JobRow = StatusJobColumns<string> & { lease_until: number | null };
type ItemRow = StatusJobItemColumns<number>;
const toJob = (r: JobRow): StatusJobRecord => statusJobFromRow(r, (t) => new Date(t));

/** The WHERE clause over `issuances` of a selector (named parameters). */
export function selectorWhere(s: StatusJobSelector): { sql: string; params: Record<string, string> } {
  const terms: string[] = [];
  const params: Record<string, string> = {};
  const eq = (column: string, key: string, value: string | undefined) => {
    if (value === undefined) return;
    terms.push(`${column} = @${key}`);
    params[key] = value;
  };
  eq('schema_id', 'schemaId', s.schemaId);
  eq('holder_did', 'holderDid', s.holderDid);
  eq('email_hash', 'emailHash', s.emailHash);
  eq('batch_id', 'batchId', s.batchId);
  eq('kid', 'kid', s.kid);
  if (s.issuedAfter) {
    terms.push('created_at >= @issuedAfter');
    params.issuedAfter = s.issuedAfter.toISOString();
  }
  if (s.issuedBefore) {
    terms.push('created_at < @issuedBefore');
    params.issuedBefore = s.issuedBefore.toISOString();
  }
  if (s.credentialIds) {
    terms.push('credential_id IN (SELECT value FROM json_each(@credentialIds))');
    params.credentialIds = JSON.stringify(s.credentialIds);
  }
  // An empty selector is refused at the edge; here it would match nothing rather than everything.
  return { sql: terms.length > 0 ? terms.join(' AND ') : '0', params };
}

const CHANGE_SQL: Record<StatusChange, string> = {
  revoke: `UPDATE issuances SET status = 1, revoked_at = COALESCE(revoked_at, @at), suspended_at = NULL
    WHERE credential_id = @id AND status != 1`,
  suspend: 'UPDATE issuances SET status = 2, suspended_at = @at WHERE credential_id = @id AND status = 0',
  unsuspend: 'UPDATE issuances SET status = 0, suspended_at = NULL WHERE credential_id = @id AND status = 2',
};

/** The job tables of migration 013; each chunk is one IMMEDIATE transaction. */
export class SqliteStatusJobStore implements StatusJobStore {
  private readonly stmts;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly audit = new SqliteAuditStore(db),
    private readonly webhooks = new SqliteWebhookStore(db),
  ) {
    this.stmts = {
      job: db.prepare<[string], JobRow>('SELECT * FROM status_jobs WHERE id = ?'),
      insertJob: db.prepare(
        `INSERT INTO status_jobs (id, change, selector, reason, actor, total, lease_owner, lease_until, created_at)
         VALUES (@id, @change, @selector, @reason, @actor, 0, @owner, @until, @createdAt)`,
      ),
      setTotal: db.prepare('UPDATE status_jobs SET total = ? WHERE id = ?'),
      lease: db.prepare(
        `UPDATE status_jobs SET lease_owner = @owner, lease_until = @until
         WHERE id = @id AND state = 'running'
           AND (lease_owner IS NULL OR lease_owner = @owner OR lease_until IS NULL OR lease_until < @now)`,
      ),
      release: db.prepare(
        'UPDATE status_jobs SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?',
      ),
      unleased: db.prepare<[number, number], { id: string }>(
        `SELECT id FROM status_jobs WHERE state = 'running' AND (lease_until IS NULL OR lease_until < ?)
         ORDER BY created_at LIMIT ?`,
      ),
      items: db.prepare<[string, string, number], ItemRow>(
        `SELECT j.credential_id, i.revocation_nonce, i.proof_type, i.status, i.status_partition, p.bits
         FROM status_job_items j
         LEFT JOIN issuances i ON i.credential_id = j.credential_id
         LEFT JOIN status_list_partitions p ON p.partition = i.status_partition
         WHERE j.job_id = ? AND j.credential_id > ? ORDER BY j.credential_id LIMIT ?`,
      ),
      revoke: db.prepare(CHANGE_SQL.revoke),
      suspend: db.prepare(CHANGE_SQL.suspend),
      unsuspend: db.prepare(CHANGE_SQL.unsuspend),
      invalidate: db.prepare(
        'UPDATE status_list_partitions SET token = NULL, etag = NULL WHERE partition = ?',
      ),
      progress: db.prepare(
        `UPDATE status_jobs SET cursor = @cursor, done = done + @done, failed = failed + @failed, lease_until = @until
         WHERE id = @id`,
      ),
      external: db.prepare<[string, string], ExternalItem>(
        `SELECT i.credential_id AS credentialId, i.revocation_nonce AS revocationNonce, i.proof_type AS proofType
         FROM status_job_items j JOIN issuances i ON i.credential_id = j.credential_id
         WHERE j.job_id = ? AND i.status != 1 AND i.proof_type IN (SELECT value FROM json_each(?))
         ORDER BY j.credential_id`,
      ),
      partitions: db.prepare<[string], { partition: number }>(
        `SELECT DISTINCT i.status_partition AS partition FROM status_job_items j
         JOIN issuances i ON i.credential_id = j.credential_id
         WHERE j.job_id = ? AND i.status_partition IS NOT NULL ORDER BY 1`,
      ),
      finishDone: db.prepare(
        `UPDATE status_jobs SET state = 'done', done = total - failed, finished_at = ?, lease_owner = NULL, lease_until = NULL
         WHERE id = ? AND state = 'running' AND lease_owner = ?`,
      ),
      finishFailed: db.prepare(
        `UPDATE status_jobs SET state = 'failed', error = ?, finished_at = ?, lease_owner = NULL, lease_until = NULL
         WHERE id = ? AND state = 'running' AND lease_owner = ?`,
      ),
      failure: db.prepare(
        `UPDATE status_jobs SET attempts = attempts + 1, error = ?, lease_owner = NULL, lease_until = NULL
         WHERE id = ? AND lease_owner = ?`,
      ),
    } as const;
  }

  async count(selector: StatusJobSelector): Promise<number> {
    const { sql, params } = selectorWhere(selector);
    return (
      this.db
        .prepare<Record<string, string>, { n: number }>(`SELECT COUNT(*) AS n FROM issuances WHERE ${sql}`)
        .get(params)?.n ?? 0
    );
  }

  async create(job: NewStatusJob, owner: string, leaseMs: number): Promise<StatusJobRecord> {
    const { sql, params } = selectorWhere(job.selector);
    const insertItems = this.db.prepare(
      `INSERT INTO status_job_items (job_id, credential_id) SELECT @jobId, credential_id FROM issuances WHERE ${sql}`,
    );
    return this.db
      .transaction(() => {
        this.stmts.insertJob.run({
          id: job.id,
          change: job.change,
          selector: selectorJson(job.selector),
          reason: job.reason,
          actor: job.actor,
          owner,
          until: Date.now() + leaseMs,
          createdAt: job.createdAt.toISOString(),
        });
        const total = insertItems.run({ ...params, jobId: job.id }).changes;
        // Thrown inside the transaction: the job and its items are rolled back with it.
        if (job.expectedCount !== undefined && total !== job.expectedCount)
          throw new SelectionChanged(job.expectedCount, total);
        this.stmts.setTotal.run(total, job.id);
        this.audit.insertAudit({
          at: job.createdAt,
          actor: job.actor,
          action: 'status-change.job',
          target: `${job.change} ${total}`,
          reason: job.reason,
          jobId: job.id,
        });
        return toJob(this.stmts.job.get(job.id)!);
      })
      .immediate();
  }

  async get(id: string): Promise<StatusJobRecord | undefined> {
    const row = this.stmts.job.get(id);
    return row ? toJob(row) : undefined;
  }

  async lease(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const now = Date.now();
    return this.stmts.lease.run({ id, owner, until: now + leaseMs, now }).changes === 1;
  }

  async releaseLease(id: string, owner: string): Promise<void> {
    this.stmts.release.run(id, owner);
  }

  async unleasedJobs(limit: number): Promise<string[]> {
    return this.stmts.unleased.all(Date.now(), limit).map((r) => r.id);
  }

  async applyChunk(
    id: string,
    owner: string,
    leaseMs: number,
    limit: number,
    externalProofTypes: readonly string[],
    at: Date,
  ): Promise<ChunkOutcome | undefined> {
    return this.db
      .transaction((): ChunkOutcome | undefined => {
        const job = this.stmts.job.get(id);
        if (job?.state !== 'running' || job.lease_owner !== owner) return undefined;
        const items = this.stmts.items.all(id, job.cursor ?? '', limit);
        const audit = jobAudit(job);
        const iso = at.toISOString();
        const partitions = new Set<number>();
        let done = 0;
        let failed = 0;
        for (const item of items) {
          const action = itemAction(job.change, { ...item, proofType: item.proof_type }, externalProofTypes);
          if (action === 'external') continue;
          if (action === 'failed') {
            failed++;
            continue;
          }
          done++;
          if (action === 'done') continue;
          const changed = this.stmts[job.change].run({ id: item.credential_id, at: iso }).changes;
          if (changed === 0) continue;
          const nonce = item.revocation_nonce!;
          this.audit.insertAudit({ ...audit, at, action: job.change, target: String(nonce) });
          // Written (with its deliveries) only while an endpoint exists.
          this.webhooks.insertEvent(
            statusChangeEvent(
              { credentialId: item.credential_id, revocationNonce: nonce },
              job.change,
              audit,
            ),
            at,
          );
          if (item.status_partition !== null) partitions.add(item.status_partition);
        }
        for (const partition of partitions) this.stmts.invalidate.run(partition);
        const last = items.at(-1)?.credential_id ?? job.cursor;
        this.stmts.progress.run({ id, cursor: last, done, failed, until: Date.now() + leaseMs });
        return {
          worked: items.length,
          done,
          failed,
          partitions: [...partitions],
          finished: items.length < limit,
        };
      })
      .immediate();
  }

  async pendingExternal(id: string, proofTypes: readonly string[]): Promise<ExternalItem[]> {
    return this.stmts.external.all(id, JSON.stringify(proofTypes));
  }

  async partitions(id: string): Promise<number[]> {
    return this.stmts.partitions.all(id).map((r) => r.partition);
  }

  async finish(
    id: string,
    owner: string,
    state: 'done' | 'failed',
    at: Date,
    error?: string,
  ): Promise<boolean> {
    const changes =
      state === 'done'
        ? this.stmts.finishDone.run(at.toISOString(), id, owner).changes
        : this.stmts.finishFailed.run(error ?? null, at.toISOString(), id, owner).changes;
    return changes === 1;
  }

  async recordFailure(id: string, owner: string, error: string): Promise<number> {
    this.stmts.failure.run(error, id, owner);
    return this.stmts.job.get(id)?.attempts ?? 0;
  }
}
