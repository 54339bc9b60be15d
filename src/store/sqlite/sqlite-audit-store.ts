import type { AuditAction } from '../../model.js';
import type { AuditEntry, AuditQuery, AuditStore, MetaStore } from '../store.js';
import type { SqliteDatabase } from './database.js';

interface AuditRow {
  at: string;
  actor: string;
  action: AuditAction;
  target: string;
  reason: string | null;
}

/**
 * The audit log. `insertAudit` is synchronous so that the stores whose changes it
 * describes call it inside their own transaction on the same connection.
 */
export class SqliteAuditStore implements AuditStore {
  private readonly insert;

  constructor(private readonly db: SqliteDatabase) {
    this.insert = db.prepare(
      'INSERT INTO audit_log (at, actor, action, target, reason) VALUES (@at, @actor, @action, @target, @reason)',
    );
  }

  insertAudit(entry: AuditEntry): void {
    this.insert.run({
      at: entry.at.toISOString(),
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      reason: entry.reason ?? null,
    });
  }

  async record(entry: AuditEntry): Promise<void> {
    this.insertAudit(entry);
  }

  async list(q: AuditQuery): Promise<{ records: AuditEntry[]; total: number }> {
    const where: string[] = [];
    const params: Record<string, unknown> = {};
    if (q.action) {
      where.push('action = @action');
      params.action = q.action;
    }
    if (q.actor) {
      where.push('actor = @actor');
      params.actor = q.actor;
    }
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const total =
      this.db
        .prepare<Record<string, unknown>, { n: number }>(`SELECT COUNT(*) AS n FROM audit_log ${clause}`)
        .get(params)?.n ?? 0;
    const rows = this.db
      .prepare<Record<string, unknown>, AuditRow>(
        `SELECT at, actor, action, target, reason FROM audit_log ${clause} ORDER BY id DESC LIMIT @limit OFFSET @offset`,
      )
      .all({ ...params, limit: q.limit, offset: (q.page - 1) * q.limit });
    return {
      total,
      records: rows.map((r) => ({
        at: new Date(r.at),
        actor: r.actor,
        action: r.action,
        target: r.target,
        ...(r.reason === null ? {} : { reason: r.reason }),
      })),
    };
  }
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
