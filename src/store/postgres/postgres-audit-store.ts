import type { AuditAction } from '../../model.js';
import type { AuditEntry, AuditQuery, AuditStore, MetaStore } from '../store.js';
import type { PgPool, Queryable } from './database.js';

/** One audit row on `q`: the pool, or a client inside the transaction of the change it records. */
export async function insertAudit(q: Queryable, entry: AuditEntry): Promise<void> {
  await q.query({
    name: 'pg-audit-insert',
    text: 'INSERT INTO audit_log (at, actor, action, target, reason) VALUES ($1, $2, $3, $4, $5)',
    values: [entry.at, entry.actor, entry.action, entry.target, entry.reason ?? null],
  });
}

/** The audit log of migration 005 (docs/operations.md). */
export class PostgresAuditStore implements AuditStore {
  constructor(private readonly pool: PgPool) {}

  record(entry: AuditEntry): Promise<void> {
    return insertAudit(this.pool, entry);
  }

  async list(q: AuditQuery): Promise<{ records: AuditEntry[]; total: number }> {
    const where: string[] = [];
    const values: unknown[] = [];
    if (q.action) where.push(`action = $${values.push(q.action)}`);
    if (q.actor) where.push(`actor = $${values.push(q.actor)}`);
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const total = await this.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM audit_log ${clause}`,
      values,
    );
    const rows = await this.pool.query<{
      at: Date;
      actor: string;
      action: AuditAction;
      target: string;
      reason: string | null;
    }>(
      `SELECT at, actor, action, target, reason FROM audit_log ${clause} ORDER BY id DESC
       LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      [...values, q.limit, (q.page - 1) * q.limit],
    );
    return {
      total: Number(total.rows[0]?.n ?? 0),
      records: rows.rows.map((r) => ({
        at: r.at,
        actor: r.actor,
        action: r.action,
        target: r.target,
        ...(r.reason === null ? {} : { reason: r.reason }),
      })),
    };
  }
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
