import type { AuditAction } from '../../model.js';
import { type FilterTerm, type PgStatement, SCAN_LIMIT, splitFilters } from '../keyset.js';
import type { AuditEntry, AuditPage, AuditQuery, AuditStore, MetaStore } from '../store.js';
import type { PgPool, Queryable } from './database.js';
import { readKeysetPage } from './keyset-read.js';

/** One audit row on `q`: the pool, or a client inside the transaction of the change it records. */
export async function insertAudit(q: Queryable, entry: AuditEntry): Promise<void> {
  await q.query({
    name: 'pg-audit-insert',
    text: 'INSERT INTO audit_log (at, actor, action, target, reason, job_id) VALUES ($1, $2, $3, $4, $5, $6)',
    values: [entry.at, entry.actor, entry.action, entry.target, entry.reason ?? null, entry.jobId ?? null],
  });
}

/** The audit log of migration 005 (docs/operations.md). */
export class PostgresAuditStore implements AuditStore {
  constructor(private readonly pool: PgPool) {}

  record(entry: AuditEntry): Promise<void> {
    return insertAudit(this.pool, entry);
  }

  async list(q: AuditQuery): Promise<AuditPage> {
    return readKeysetPage<AuditRow, { id: string }, number, AuditEntry>(this.pool, auditStatements(q), q, {
      key: (r) => Number(r.id),
      endKey: (r) => Number(r.id),
      record: toEntry,
    });
  }

  async trail(targets: string[], limit: number): Promise<AuditEntry[]> {
    if (targets.length === 0) return [];
    const { rows } = await this.pool.query<AuditRow>(
      `SELECT id, at, actor, action, target, reason FROM audit_log WHERE target = ANY($1::text[])
       ORDER BY id DESC LIMIT $2`,
      [targets, limit],
    );
    return rows.map(toEntry);
  }
}

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: AuditAction;
  target: string;
  reason: string | null;
  job_id: string | null;
}

export const toEntry = (r: AuditRow): AuditEntry => ({
  at: r.at,
  actor: r.actor,
  action: r.action,
  target: r.target,
  ...(r.reason === null ? {} : { reason: r.reason }),
  ...(r.job_id === null ? {} : { jobId: r.job_id }),
});

/**
 * The statements of one audit read, newest first by id, exported for the query-plan tests (as
 * `historyStatements` in postgres-history-store.ts): audit_log_actor and audit_log_action
 * (migration 005) each yield one filter's rows in id order; with both filters the second is
 * checked row by row.
 */
export function auditStatements(q: AuditQuery): {
  page: PgStatement;
  scanEnd?: PgStatement | undefined;
  count: PgStatement;
} {
  // PostgreSQL wants exactly the parameters a statement names: each term numbers its own when written.
  type Param = (value: unknown) => string;
  const terms: FilterTerm<(param: Param) => string>[] = [];
  const { actor, action, after } = q;
  if (actor !== undefined) terms.push({ sql: (param) => `actor = ${param(actor)}`, drives: true });
  if (action !== undefined) terms.push({ sql: (param) => `action = ${param(action)}`, drives: true });
  // Dates are checked on the rows the id order yields (ids grow with time).
  const { from, to } = q;
  if (from !== undefined) terms.push({ sql: (param) => `at >= ${param(from)}::timestamptz`, drives: false });
  if (to !== undefined) terms.push({ sql: (param) => `at < ${param(to)}::timestamptz`, drives: false });
  const { drive, rest } = splitFilters(terms);
  if (after !== undefined) drive.push((param) => `id < ${param(after)}::bigint`);
  const build = (
    write: (param: Param, where: (conds: Array<(param: Param) => string>) => string) => string,
  ) => {
    const values: unknown[] = [];
    const param: Param = (v) => `$${values.push(v)}`;
    const where = (conds: Array<(param: Param) => string>) =>
      conds.length > 0 ? `WHERE ${conds.map((c) => c(param)).join(' AND ')}` : '';
    return { text: write(param, where), values };
  };
  const count = build(
    (_, where) => `SELECT count(*)::int AS n FROM audit_log ${where(terms.map((t) => t.sql))}`,
  );
  const columns = 'id, at, actor, action, target, reason, job_id';
  if (q.page !== undefined) {
    const page = build(
      (param, where) => `SELECT ${columns} FROM audit_log ${where(terms.map((t) => t.sql))} ORDER BY id DESC
        LIMIT ${param(q.limit + 1)} OFFSET ${param((q.page! - 1) * q.limit)}`,
    );
    return { page, count };
  }
  if (rest.length === 0) {
    const page = build(
      (param, where) =>
        `SELECT ${columns} FROM audit_log ${where(drive)} ORDER BY id DESC LIMIT ${param(q.limit + 1)}`,
    );
    return { page, count };
  }
  const page = build(
    (param, where) => `SELECT * FROM (SELECT ${columns} FROM audit_log ${where(drive)} ORDER BY id DESC
      LIMIT ${param(SCAN_LIMIT)}) AS scanned ${where(rest)} ORDER BY id DESC LIMIT ${param(q.limit + 1)}`,
  );
  const scanEnd = build(
    (param, where) =>
      `SELECT id FROM audit_log ${where(drive)} ORDER BY id DESC LIMIT 1 OFFSET ${param(SCAN_LIMIT - 1)}`,
  );
  return { page, scanEnd, count };
}

export class PostgresMetaStore implements MetaStore {
  constructor(private readonly pool: PgPool) {}

  async get(key: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ value: string }>('SELECT value FROM meta WHERE key = $1', [key]);
    return rows[0]?.value;
  }

  async setIfAbsent(key: string, value: string): Promise<string> {
    await this.pool.query('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [
      key,
      value,
    ]);
    return (await this.get(key))!;
  }
}
