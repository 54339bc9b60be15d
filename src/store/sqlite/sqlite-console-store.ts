import type {
  AuditEntry,
  ConsoleSessionLimits,
  ConsoleSessionRecord,
  ConsoleStore,
  HourlyIssuances,
} from '../store.js';
import type { SqliteDatabase } from './database.js';
import { type AuditRow, toEntry } from './sqlite-audit-store.js';

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

/** Console sessions and reads (migrations 012 and 022). */
export class SqliteConsoleStore implements ConsoleStore {
  private readonly stmts;

  constructor(private readonly db: SqliteDatabase) {
    this.stmts = {
      create: db.prepare(
        'INSERT INTO console_sessions (id_hash, actor, key_hash, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)',
      ),
      use: db.prepare<[number, string, number, number], SessionRow>(
        `UPDATE console_sessions SET last_seen_at = ? WHERE id_hash = ? AND last_seen_at > ? AND created_at > ?
         RETURNING actor, key_hash, created_at, last_seen_at`,
      ),
      list: db.prepare<[number, number], SessionRow & { id_hash: string }>(
        `SELECT id_hash, actor, key_hash, created_at, last_seen_at FROM console_sessions
         WHERE last_seen_at > ? AND created_at > ? ORDER BY created_at, id_hash`,
      ),
      end: db.prepare('DELETE FROM console_sessions WHERE id_hash = ?'),
      expired: db.prepare('DELETE FROM console_sessions WHERE last_seen_at <= ? OR created_at <= ?'),
      perHour: db.prepare<[string], { hour: string; channel: string; proof_type: string; n: number }>(
        `SELECT substr(created_at, 1, 13) AS hour, channel, proof_type, COUNT(*) AS n FROM issuances
         WHERE created_at >= ? GROUP BY hour, channel, proof_type ORDER BY hour`,
      ),
    };
  }

  async createSession(idHash: string, actor: string, keyHash: string, at: Date): Promise<void> {
    this.stmts.create.run(idHash, actor, keyHash, at.getTime(), at.getTime());
  }

  async useSession(
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

  async listSessions(
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<Array<ConsoleSessionRecord & { idHash: string }>> {
    const t = now.getTime();
    return this.stmts.list
      .all(t - limits.idleMs, t - limits.absoluteMs)
      .map((row) => ({ idHash: row.id_hash, ...toRecord(row) }));
  }

  async endSession(idHash: string): Promise<boolean> {
    return this.stmts.end.run(idHash).changes > 0;
  }

  async endExpiredSessions(now: Date, limits: ConsoleSessionLimits): Promise<number> {
    const t = now.getTime();
    return this.stmts.expired.run(t - limits.idleMs, t - limits.absoluteMs).changes;
  }

  async issuancesPerHour(since: Date): Promise<HourlyIssuances[]> {
    return this.stmts.perHour.all(since.toISOString()).map((r) => ({
      hour: r.hour,
      channel: r.channel as HourlyIssuances['channel'],
      proofType: r.proof_type as HourlyIssuances['proofType'],
      count: r.n,
    }));
  }

  async auditTrail(targets: string[], limit: number): Promise<AuditEntry[]> {
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
