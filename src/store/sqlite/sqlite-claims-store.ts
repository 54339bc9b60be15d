import type { AuditActor, ClaimsRecord, ClaimsStore } from '../store.js';
import type { SqliteDatabase } from './database.js';
import { SqliteAuditStore } from './sqlite-audit-store.js';

export class SqliteClaimsStore implements ClaimsStore {
  private readonly byUser;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly audit = new SqliteAuditStore(db),
  ) {
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

  async upsertClaims(records: ClaimsRecord[], audit?: AuditActor): Promise<number> {
    const stmt = this.db.prepare(
      `INSERT INTO claims (user_id, schema_id, claims, expires_at, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (user_id, schema_id) DO UPDATE SET claims = excluded.claims, expires_at = excluded.expires_at,
       updated_at = excluded.updated_at`,
    );
    const now = new Date().toISOString();
    this.db.transaction(() => {
      for (const r of records)
        stmt.run(r.userId, r.schemaId, JSON.stringify(r.claims), r.expiresAt?.toISOString() ?? null, now);
      if (audit)
        this.audit.insertAudit({
          ...audit,
          at: new Date(now),
          action: 'claims.import',
          target: importTarget(records),
        });
    })();
    return records.length;
  }

  async countClaims(): Promise<number> {
    return this.db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM claims').get()?.n ?? 0;
  }
}

/** The audit target of a claims import: how many records, for which schemas. */
export function importTarget(records: ClaimsRecord[]): string {
  const schemas = [...new Set(records.map((r) => r.schemaId))].sort();
  return `${records.length} record${records.length === 1 ? '' : 's'}: ${schemas.join(', ')}`;
}
