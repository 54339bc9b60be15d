import type { ConsoleSessionLimits, ConsoleSessionRecord, ConsoleSessionStore } from '../store.js';
import type { PgPool } from './database.js';

interface SessionRow {
  actor: string;
  key_hash: string | null;
  created_at: string;
  last_seen_at: string;
}

const toRecord = (row: SessionRow): ConsoleSessionRecord => ({
  actor: row.actor,
  keyHash: row.key_hash,
  createdAt: new Date(Number(row.created_at)),
  lastSeenAt: new Date(Number(row.last_seen_at)),
});

/**
 * Console sessions (migrations 015 and 027); epoch ms come back as bigint text. `table` is another
 * table of the same columns (the operator's sessions of a `TENANCY=multi` deployment, in its registry).
 */
export class PostgresConsoleSessionStore implements ConsoleSessionStore {
  constructor(
    private readonly pool: PgPool,
    private readonly table = 'console_sessions',
  ) {}

  async create(idHash: string, actor: string, keyHash: string, at: Date): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.table} (id_hash, actor, key_hash, created_at, last_seen_at)
       VALUES ($1, $2, $3, $4, $4)`,
      [idHash, actor, keyHash, at.getTime()],
    );
  }

  async use(
    idHash: string,
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<ConsoleSessionRecord | undefined> {
    const t = now.getTime();
    const { rows } = await this.pool.query<SessionRow>(
      `UPDATE ${this.table} SET last_seen_at = $1 WHERE id_hash = $2 AND last_seen_at > $3 AND created_at > $4
       RETURNING actor, key_hash, created_at, last_seen_at`,
      [t, idHash, t - limits.idleMs, t - limits.absoluteMs],
    );
    const row = rows[0];
    if (!row) {
      await this.end(idHash);
      return undefined;
    }
    return toRecord(row);
  }

  async list(
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<Array<ConsoleSessionRecord & { idHash: string }>> {
    const t = now.getTime();
    const { rows } = await this.pool.query<SessionRow & { id_hash: string }>(
      `SELECT id_hash, actor, key_hash, created_at, last_seen_at FROM ${this.table}
       WHERE last_seen_at > $1 AND created_at > $2 ORDER BY created_at, id_hash`,
      [t - limits.idleMs, t - limits.absoluteMs],
    );
    return rows.map((row) => ({ idHash: row.id_hash, ...toRecord(row) }));
  }

  async end(idHash: string): Promise<boolean> {
    const result = await this.pool.query(`DELETE FROM ${this.table} WHERE id_hash = $1`, [idHash]);
    return (result.rowCount ?? 0) > 0;
  }

  async endExpired(now: Date, limits: ConsoleSessionLimits): Promise<number> {
    const t = now.getTime();
    const result = await this.pool.query(
      `DELETE FROM ${this.table} WHERE last_seen_at <= $1 OR created_at <= $2`,
      [t - limits.idleMs, t - limits.absoluteMs],
    );
    return result.rowCount ?? 0;
  }
}
