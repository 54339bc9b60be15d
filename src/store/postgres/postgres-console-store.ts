import type {
  AuditEntry,
  ConsoleSessionLimits,
  ConsoleSessionRecord,
  ConsoleStore,
  HourlyIssuances,
} from '../store.js';
import type { PgPool } from './database.js';
import { type AuditRow, toEntry } from './postgres-audit-store.js';

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

/** Console sessions and reads (migrations 015 and 027); epoch ms come back as bigint text. */
export class PostgresConsoleStore implements ConsoleStore {
  constructor(private readonly pool: PgPool) {}

  async createSession(idHash: string, actor: string, keyHash: string, at: Date): Promise<void> {
    await this.pool.query(
      `INSERT INTO console_sessions (id_hash, actor, key_hash, created_at, last_seen_at)
       VALUES ($1, $2, $3, $4, $4)`,
      [idHash, actor, keyHash, at.getTime()],
    );
  }

  async useSession(
    idHash: string,
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<ConsoleSessionRecord | undefined> {
    const t = now.getTime();
    const { rows } = await this.pool.query<SessionRow>(
      `UPDATE console_sessions SET last_seen_at = $1 WHERE id_hash = $2 AND last_seen_at > $3 AND created_at > $4
       RETURNING actor, key_hash, created_at, last_seen_at`,
      [t, idHash, t - limits.idleMs, t - limits.absoluteMs],
    );
    const row = rows[0];
    if (!row) {
      await this.endSession(idHash);
      return undefined;
    }
    return toRecord(row);
  }

  async listSessions(
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<Array<ConsoleSessionRecord & { idHash: string }>> {
    const t = now.getTime();
    const { rows } = await this.pool.query<SessionRow & { id_hash: string }>(
      `SELECT id_hash, actor, key_hash, created_at, last_seen_at FROM console_sessions
       WHERE last_seen_at > $1 AND created_at > $2 ORDER BY created_at, id_hash`,
      [t - limits.idleMs, t - limits.absoluteMs],
    );
    return rows.map((row) => ({ idHash: row.id_hash, ...toRecord(row) }));
  }

  async endSession(idHash: string): Promise<boolean> {
    const result = await this.pool.query('DELETE FROM console_sessions WHERE id_hash = $1', [idHash]);
    return (result.rowCount ?? 0) > 0;
  }

  async endExpiredSessions(now: Date, limits: ConsoleSessionLimits): Promise<number> {
    const t = now.getTime();
    const result = await this.pool.query(
      'DELETE FROM console_sessions WHERE last_seen_at <= $1 OR created_at <= $2',
      [t - limits.idleMs, t - limits.absoluteMs],
    );
    return result.rowCount ?? 0;
  }

  async issuancesPerHour(since: Date): Promise<HourlyIssuances[]> {
    const { rows } = await this.pool.query<{ hour: string; channel: string; proof_type: string; n: number }>(
      `SELECT to_char(date_trunc('hour', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24') AS hour,
         channel, proof_type, count(*)::int AS n
       FROM issuances WHERE created_at >= $1 GROUP BY 1, 2, 3 ORDER BY 1`,
      [since],
    );
    return rows.map((r) => ({
      hour: r.hour,
      channel: r.channel as HourlyIssuances['channel'],
      proofType: r.proof_type as HourlyIssuances['proofType'],
      count: r.n,
    }));
  }

  async auditTrail(targets: string[], limit: number): Promise<AuditEntry[]> {
    if (targets.length === 0) return [];
    const { rows } = await this.pool.query<AuditRow>(
      `SELECT id, at, actor, action, target, reason FROM audit_log WHERE target = ANY($1::text[])
       ORDER BY id DESC LIMIT $2`,
      [targets, limit],
    );
    return rows.map(toEntry);
  }
}
