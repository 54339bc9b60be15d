import type { AuditAction } from '../../model.js';
import { type FilterTerm, SCAN_LIMIT, type SqliteStatement, splitFilters } from '../keyset.js';
import type { AuditEntry, AuditPage, AuditQuery, AuditStore, MetaStore } from '../store.js';
import type { SqliteDatabase } from './database.js';
import { readKeysetPage } from './keyset-read.js';
import type { SqliteReader } from './sqlite-reader.js';

export interface AuditRow {
  id: number;
  at: string;
  actor: string;
  action: AuditAction;
  target: string;
  reason: string | null;
  job_id: string | null;
}

/**
 * The audit log. `insertAudit` is synchronous so that the stores whose changes it
 * describes call it inside their own transaction on the same connection.
 */
export class SqliteAuditStore implements AuditStore {
  private readonly insert;

  constructor(
    private readonly db: SqliteDatabase,
    /** Where the reads that look at every matching entry run (a file database's); else this thread. */
    private readonly reader?: SqliteReader,
  ) {
    this.insert = db.prepare(
      'INSERT INTO audit_log (at, actor, action, target, reason, job_id) VALUES (@at, @actor, @action, @target, @reason, @jobId)',
    );
  }

  insertAudit(entry: AuditEntry): void {
    this.insert.run({
      at: entry.at.toISOString(),
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      reason: entry.reason ?? null,
      jobId: entry.jobId ?? null,
    });
  }

  async record(entry: AuditEntry): Promise<void> {
    this.insertAudit(entry);
  }

  async list(q: AuditQuery): Promise<AuditPage> {
    return readKeysetPage<AuditRow, { id: number }, number, AuditEntry>(
      this.db,
      this.reader,
      auditStatements(q),
      q,
      {
        key: (r) => r.id,
        endKey: (r) => r.id,
        record: toEntry,
      },
    );
  }

  async trail(targets: string[], limit: number): Promise<AuditEntry[]> {
    if (targets.length === 0) return [];
    const marks = targets.map(() => '?').join(', ');
    return this.db
      .prepare<unknown[], AuditRow>(
        `SELECT id, at, actor, action, target, reason FROM audit_log WHERE target IN (${marks})
         ORDER BY id DESC LIMIT ?`,
      )
      .all(...targets, limit)
      .map(toEntry);
  }
}

export const toEntry = (r: AuditRow): AuditEntry => ({
  at: new Date(r.at),
  actor: r.actor,
  action: r.action,
  target: r.target,
  ...(r.reason === null ? {} : { reason: r.reason }),
  ...(r.job_id === null ? {} : { jobId: r.job_id }),
});

type Params = Record<string, string | number>;

/**
 * The statements of one audit read, newest first by id, exported for the query-plan tests (as
 * `historyStatements` in sqlite-history-store.ts): audit_log_actor and audit_log_action (migration
 * 005) each yield one filter's rows in id order; with both filters the second is checked row by row.
 */
export function auditStatements(q: AuditQuery): {
  page: SqliteStatement;
  scanEnd?: SqliteStatement | undefined;
  count: SqliteStatement;
} {
  const params: Params = { limit: q.limit + 1 };
  const terms: FilterTerm[] = [];
  if (q.actor !== undefined) {
    params.actor = q.actor;
    terms.push({ sql: 'actor = @actor', drives: true });
  }
  if (q.action !== undefined) {
    params.action = q.action;
    terms.push({ sql: 'action = @action', drives: true });
  }
  // Dates are checked on the rows the id order yields (ids grow with time).
  if (q.from !== undefined) {
    params.from = q.from.toISOString();
    terms.push({ sql: 'at >= @from', drives: false });
  }
  if (q.to !== undefined) {
    params.to = q.to.toISOString();
    terms.push({ sql: 'at < @to', drives: false });
  }
  const where = (conds: string[]) => (conds.length > 0 ? `WHERE ${conds.join(' AND ')}` : '');
  const all = terms.map((t) => t.sql);
  const count = { sql: `SELECT COUNT(*) AS n FROM audit_log ${where(all)}`, params };
  const columns = 'id, at, actor, action, target, reason, job_id';
  if (q.page !== undefined) {
    params.offset = (q.page - 1) * q.limit;
    const sql = `SELECT ${columns} FROM audit_log ${where(all)} ORDER BY id DESC LIMIT @limit OFFSET @offset`;
    return { page: { sql, params }, count };
  }
  const { drive, rest } = splitFilters(terms);
  if (q.after !== undefined) {
    params.after = q.after;
    drive.push('id < @after');
  }
  if (rest.length === 0) {
    const sql = `SELECT ${columns} FROM audit_log ${where(drive)} ORDER BY id DESC LIMIT @limit`;
    return { page: { sql, params }, count };
  }
  params.scan = SCAN_LIMIT;
  const sql = `SELECT * FROM (SELECT ${columns} FROM audit_log ${where(drive)} ORDER BY id DESC LIMIT @scan)
    ${where(rest)} ORDER BY id DESC LIMIT @limit`;
  const scanEnd = {
    sql: `SELECT id FROM audit_log ${where(drive)} ORDER BY id DESC LIMIT 1 OFFSET @scan - 1`,
    params,
  };
  return { page: { sql, params }, scanEnd, count };
}

export class SqliteMetaStore implements MetaStore {
  constructor(private readonly db: SqliteDatabase) {}

  async get(key: string): Promise<string | undefined> {
    return this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get(key)
      ?.value;
  }

  async setIfAbsent(key: string, value: string): Promise<string> {
    this.db
      .prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING')
      .run(key, value);
    return (await this.get(key)) ?? value;
  }
}
