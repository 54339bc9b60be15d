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
import { type PgPool, withTransaction } from './database.js';
import { insertAudit } from './postgres-audit-store.js';

type JobRow = StatusJobColumns<Date>;
type ItemRow = StatusJobItemColumns<string>;
const toJob = (r: JobRow): StatusJobRecord => statusJobFromRow(r, (t) => t);

/** The WHERE clause over `issuances` of a selector, its parameters numbered from `$first`. */
export function selectorWhere(s: StatusJobSelector, first = 1): { sql: string; values: unknown[] } {
  const terms: string[] = [];
  const values: unknown[] = [];
  const add = (term: (p: string) => string, value: unknown) => {
    if (value === undefined) return;
    values.push(value);
    terms.push(term(`$${first + values.length - 1}`));
  };
  add((p) => `schema_id = ${p}`, s.schemaId);
  add((p) => `holder_did = ${p}`, s.holderDid);
  add((p) => `email_hash = ${p}`, s.emailHash);
  add((p) => `batch_id = ${p}`, s.batchId);
  add((p) => `kid = ${p}`, s.kid);
  add((p) => `created_at >= ${p}::timestamptz`, s.issuedAfter);
  add((p) => `created_at < ${p}::timestamptz`, s.issuedBefore);
  add((p) => `credential_id = ANY(${p}::text[])`, s.credentialIds);
  // An empty selector is refused at the edge; here it would match nothing rather than everything.
  return { sql: terms.length > 0 ? terms.join(' AND ') : 'false', values };
}

const CHANGE_SET: Record<StatusChange, string> = {
  revoke:
    'status = 1, revoked_at = COALESCE(revoked_at, $2), suspended_at = NULL WHERE credential_id = ANY($1::text[]) AND status <> 1',
  suspend: 'status = 2, suspended_at = $2 WHERE credential_id = ANY($1::text[]) AND status = 0',
  unsuspend:
    'status = 0, suspended_at = NULL WHERE credential_id = ANY($1::text[]) AND status = 2 AND $2::timestamptz IS NOT NULL',
};

/**
 * The job tables of migration 016. A chunk is one transaction of a few set statements (the
 * change, its audit rows, its events, the partitions' invalidation, the job's progress), begun by
 * locking the job row, so two instances never work one chunk.
 */
export class PostgresStatusJobStore implements StatusJobStore {
  constructor(private readonly pool: PgPool) {}

  async count(selector: StatusJobSelector): Promise<number> {
    const { sql, values } = selectorWhere(selector);
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM issuances WHERE ${sql}`,
      values,
    );
    return rows[0]?.n ?? 0;
  }

  async create(job: NewStatusJob, owner: string, leaseMs: number): Promise<StatusJobRecord> {
    return withTransaction(this.pool, async (client) => {
      await client.query(
        `INSERT INTO status_jobs (id, change, selector, reason, actor, total, lease_owner, lease_until, created_at)
         VALUES ($1, $2, $3, $4, $5, 0, $6, now() + make_interval(secs => $7::float8 / 1000), $8)`,
        [
          job.id,
          job.change,
          selectorJson(job.selector),
          job.reason,
          job.actor,
          owner,
          leaseMs,
          job.createdAt,
        ],
      );
      const { sql, values } = selectorWhere(job.selector, 2);
      const inserted = await client.query(
        `INSERT INTO status_job_items (job_id, credential_id) SELECT $1, credential_id FROM issuances WHERE ${sql}`,
        [job.id, ...values],
      );
      // Thrown inside the transaction: the job and its items are rolled back with it.
      const total = inserted.rowCount ?? 0;
      if (job.expectedCount !== undefined && total !== job.expectedCount)
        throw new SelectionChanged(job.expectedCount, total);
      await insertAudit(client, {
        at: job.createdAt,
        actor: job.actor,
        action: 'status-change.job',
        target: `${job.change} ${inserted.rowCount ?? 0}`,
        reason: job.reason,
        jobId: job.id,
      });
      const { rows } = await client.query<JobRow>(
        'UPDATE status_jobs SET total = $1 WHERE id = $2 RETURNING *',
        [inserted.rowCount ?? 0, job.id],
      );
      return toJob(rows[0]!);
    });
  }

  async get(id: string): Promise<StatusJobRecord | undefined> {
    const { rows } = await this.pool.query<JobRow>('SELECT * FROM status_jobs WHERE id = $1', [id]);
    return rows[0] ? toJob(rows[0]) : undefined;
  }

  async lease(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE status_jobs SET lease_owner = $2, lease_until = now() + make_interval(secs => $3::float8 / 1000)
       WHERE id = $1 AND state = 'running'
         AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until IS NULL OR lease_until < now())`,
      [id, owner, leaseMs],
    );
    return rowCount === 1;
  }

  async releaseLease(id: string, owner: string): Promise<void> {
    await this.pool.query(
      'UPDATE status_jobs SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2',
      [id, owner],
    );
  }

  async unleasedJobs(limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `SELECT id FROM status_jobs WHERE state = 'running' AND (lease_until IS NULL OR lease_until < now())
       ORDER BY created_at LIMIT $1`,
      [limit],
    );
    return rows.map((r) => r.id);
  }

  async applyChunk(
    id: string,
    owner: string,
    leaseMs: number,
    limit: number,
    externalProofTypes: readonly string[],
    at: Date,
  ): Promise<ChunkOutcome | undefined> {
    return withTransaction(this.pool, async (client) => {
      const { rows: jobs } = await client.query<JobRow>(
        'SELECT * FROM status_jobs WHERE id = $1 FOR UPDATE',
        [id],
      );
      const job = jobs[0];
      if (job?.state !== 'running' || job.lease_owner !== owner) return undefined;
      const { rows: items } = await client.query<ItemRow>(
        `SELECT j.credential_id, i.revocation_nonce, i.proof_type, i.status, i.status_partition, p.bits
         FROM status_job_items j
         LEFT JOIN issuances i ON i.credential_id = j.credential_id
         LEFT JOIN status_list_partitions p ON p.partition = i.status_partition
         WHERE j.job_id = $1 AND j.credential_id > $2 ORDER BY j.credential_id LIMIT $3`,
        [id, job.cursor ?? '', limit],
      );
      let done = 0;
      let failed = 0;
      const toChange: string[] = [];
      for (const item of items) {
        const action = itemAction(job.change, { ...item, proofType: item.proof_type }, externalProofTypes);
        if (action === 'external') continue;
        if (action === 'failed') failed++;
        else done++;
        if (action === 'change') toChange.push(item.credential_id);
      }
      const partitions = new Set<number>();
      if (toChange.length > 0) {
        const { rows: changed } = await client.query<{
          credential_id: string;
          revocation_nonce: string;
          status_partition: number | null;
        }>(
          `UPDATE issuances SET ${CHANGE_SET[job.change]} RETURNING credential_id, revocation_nonce, status_partition`,
          [toChange, at],
        );
        const audit = jobAudit(job);
        if (changed.length > 0) {
          await client.query(
            `INSERT INTO audit_log (at, actor, action, target, reason, job_id)
             SELECT $1, $2, $3, t, $4, $5 FROM unnest($6::text[]) AS t`,
            [at, job.actor, job.change, job.reason, job.id, changed.map((r) => r.revocation_nonce)],
          );
          const events = changed.map((r) =>
            statusChangeEvent(
              { credentialId: r.credential_id, revocationNonce: Number(r.revocation_nonce) },
              job.change,
              audit,
            ),
          );
          await client.query(
            `INSERT INTO webhook_events (id, type, data, created_at)
             SELECT e.id, $3, e.data, $4 FROM unnest($1::text[], $2::text[]) AS e (id, data)
             WHERE EXISTS (SELECT 1 FROM webhook_endpoints)`,
            [events.map((e) => e.id), events.map((e) => e.data), events[0]!.type, at],
          );
        }
        for (const r of changed) if (r.status_partition !== null) partitions.add(r.status_partition);
        if (partitions.size > 0)
          await client.query(
            `UPDATE status_list_partitions SET token = NULL, etag = NULL, build_ticket = NULL, version = version + 1
             WHERE partition = ANY($1::int[])`,
            [[...partitions]],
          );
      }
      await client.query(
        `UPDATE status_jobs SET cursor = $2, done = done + $3, failed = failed + $4,
           lease_until = now() + make_interval(secs => $5::float8 / 1000) WHERE id = $1`,
        [id, items.at(-1)?.credential_id ?? job.cursor, done, failed, leaseMs],
      );
      return {
        worked: items.length,
        done,
        failed,
        partitions: [...partitions],
        finished: items.length < limit,
      };
    });
  }

  async pendingExternal(id: string, proofTypes: readonly string[]): Promise<ExternalItem[]> {
    const { rows } = await this.pool.query<{
      credential_id: string;
      revocation_nonce: string;
      proof_type: string;
    }>(
      `SELECT i.credential_id, i.revocation_nonce, i.proof_type
       FROM status_job_items j JOIN issuances i ON i.credential_id = j.credential_id
       WHERE j.job_id = $1 AND i.status <> 1 AND i.proof_type = ANY($2::text[]) ORDER BY j.credential_id`,
      [id, proofTypes],
    );
    return rows.map((r) => ({
      credentialId: r.credential_id,
      revocationNonce: Number(r.revocation_nonce),
      proofType: r.proof_type,
    }));
  }

  async partitions(id: string): Promise<number[]> {
    const { rows } = await this.pool.query<{ partition: number }>(
      `SELECT DISTINCT i.status_partition AS partition FROM status_job_items j
       JOIN issuances i ON i.credential_id = j.credential_id
       WHERE j.job_id = $1 AND i.status_partition IS NOT NULL ORDER BY 1`,
      [id],
    );
    return rows.map((r) => r.partition);
  }

  async finish(
    id: string,
    owner: string,
    state: 'done' | 'failed',
    at: Date,
    error?: string,
  ): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE status_jobs SET state = $3, error = COALESCE($4, error), finished_at = $5,
         done = CASE WHEN $3 = 'done' THEN total - failed ELSE done END, lease_owner = NULL, lease_until = NULL
       WHERE id = $1 AND state = 'running' AND lease_owner = $2`,
      [id, owner, state, error ?? null, at],
    );
    return rowCount === 1;
  }

  async recordFailure(id: string, owner: string, error: string): Promise<number> {
    const { rows } = await this.pool.query<{ attempts: number }>(
      `UPDATE status_jobs SET attempts = attempts + 1, error = $3, lease_owner = NULL, lease_until = NULL
       WHERE id = $1 AND lease_owner = $2 RETURNING attempts`,
      [id, owner, error],
    );
    return rows[0]?.attempts ?? 0;
  }
}
