import type { ClaimsRecord, ClaimsStore } from '../store.js';
import type { SqliteDatabase } from './database.js';

export class SqliteClaimsStore implements ClaimsStore {
  private readonly byUser;

  constructor(private readonly db: SqliteDatabase) {
    this.byUser = db.prepare<[string, string], { claims: string; expires_at: string | null }>(
      'SELECT claims, expires_at FROM claims WHERE user_id = ? AND schema_id = ?',
    );
  }

  async getClaims(userId: string, schemaId: string): Promise<ClaimsRecord | undefined> {
    const row = this.byUser.get(userId, schemaId);
    if (!row) return undefined;
    return {
      userId,
      schemaId,
      claims: JSON.parse(row.claims) as Record<string, unknown>,
      expiresAt: row.expires_at ? new Date(row.expires_at) : null,
    };
  }

  async upsertClaims(records: ClaimsRecord[]): Promise<number> {
    const stmt = this.db.prepare(
      `INSERT INTO claims (user_id, schema_id, claims, expires_at, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (user_id, schema_id) DO UPDATE SET claims = excluded.claims, expires_at = excluded.expires_at,
       updated_at = excluded.updated_at`,
    );
    const now = new Date().toISOString();
    this.db.transaction(() => {
      for (const r of records)
        stmt.run(r.userId, r.schemaId, JSON.stringify(r.claims), r.expiresAt?.toISOString() ?? null, now);
    })();
    return records.length;
  }

  async countClaims(): Promise<number> {
    return this.db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM claims').get()?.n ?? 0;
  }
}
