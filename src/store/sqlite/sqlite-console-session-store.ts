import type { ConsoleSessionLimits, ConsoleSessionRecord, ConsoleSessionStore } from '../store.js';
import type { SqliteDatabase } from './database.js';

interface SessionRow {
  actor: string;
  key_hash: string | null;
  created_at: number;
  last_seen_at: number;
}

const toRecord = (row: SessionRow): ConsoleSessionRecord => ({
  actor: row.actor,
  keyHash: row.key_hash,
  createdAt: new Date(row.created_at),
  lastSeenAt: new Date(row.last_seen_at),
});

/**
 * Console sessions (migrations 012 and 022); `table` is another table of the same columns (the
 * operator's sessions of a `TENANCY=multi` deployment, in its registry).
 */
export class SqliteConsoleSessionStore implements ConsoleSessionStore {
  private readonly stmts;

  constructor(db: SqliteDatabase, table = 'console_sessions') {
    this.stmts = {
      create: db.prepare(
        `INSERT INTO ${table} (id_hash, actor, key_hash, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)`,
      ),
      use: db.prepare<[number, string, number, number], SessionRow>(
        `UPDATE ${table} SET last_seen_at = ? WHERE id_hash = ? AND last_seen_at > ? AND created_at > ?
         RETURNING actor, key_hash, created_at, last_seen_at`,
      ),
      list: db.prepare<[number, number], SessionRow & { id_hash: string }>(
        `SELECT id_hash, actor, key_hash, created_at, last_seen_at FROM ${table}
         WHERE last_seen_at > ? AND created_at > ? ORDER BY created_at, id_hash`,
      ),
      end: db.prepare(`DELETE FROM ${table} WHERE id_hash = ?`),
      expired: db.prepare(`DELETE FROM ${table} WHERE last_seen_at <= ? OR created_at <= ?`),
    };
  }

  async create(idHash: string, actor: string, keyHash: string, at: Date): Promise<void> {
    this.stmts.create.run(idHash, actor, keyHash, at.getTime(), at.getTime());
  }

  async use(
    idHash: string,
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<ConsoleSessionRecord | undefined> {
    const t = now.getTime();
    const row = this.stmts.use.get(t, idHash, t - limits.idleMs, t - limits.absoluteMs);
    if (!row) {
      this.stmts.end.run(idHash);
      return undefined;
    }
    return toRecord(row);
  }

  async list(
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<Array<ConsoleSessionRecord & { idHash: string }>> {
    const t = now.getTime();
    return this.stmts.list
      .all(t - limits.idleMs, t - limits.absoluteMs)
      .map((row) => ({ idHash: row.id_hash, ...toRecord(row) }));
  }

  async end(idHash: string): Promise<boolean> {
    return this.stmts.end.run(idHash).changes > 0;
  }

  async endExpired(now: Date, limits: ConsoleSessionLimits): Promise<number> {
    const t = now.getTime();
    return this.stmts.expired.run(t - limits.idleMs, t - limits.absoluteMs).changes;
  }
}
