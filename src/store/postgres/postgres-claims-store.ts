import { importTarget } from '../sqlite/sqlite-claims-store.js';
import type { AuditActor, ClaimsRecord, ClaimsStore } from '../store.js';
import { type PgPool, withTransaction } from './database.js';
import { insertAudit } from './postgres-audit-store.js';

// Rows per INSERT: one statement carries a batch as arrays (unnest) instead of a round trip each.
const BATCH = 1000;

export class PostgresClaimsStore implements ClaimsStore {
  constructor(private readonly pool: PgPool) {}

  async getClaims(userId: string, schemaId: string): Promise<ClaimsRecord | undefined> {
    const { rows } = await this.pool.query<{ claims: string; expires_at: Date | null }>({
      name: 'pg-get-claims',
      text: 'SELECT claims, expires_at FROM claims WHERE user_id = $1 AND schema_id = $2',
      values: [userId, schemaId],
    });
    const row = rows[0];
    if (!row) return undefined;
    return {
      userId,
      schemaId,
      claims: JSON.parse(row.claims) as Record<string, unknown>,
      expiresAt: row.expires_at,
    };
  }

  async upsertClaims(records: ClaimsRecord[], audit?: AuditActor): Promise<number> {
    // One statement may not touch a row twice: the last record for a (user, schema) wins, as it
    // would if the records were written one after the other.
    const latest = new Map<string, ClaimsRecord>();
    for (const r of records) latest.set(JSON.stringify([r.userId, r.schemaId]), r);
    const unique = [...latest.values()];
    const now = new Date();
    await withTransaction(this.pool, async (client) => {
      for (let i = 0; i < unique.length; i += BATCH) {
        const batch = unique.slice(i, i + BATCH);
        await client.query(
          `INSERT INTO claims (user_id, schema_id, claims, expires_at, updated_at)
           SELECT u, s, c, e, $5 FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS b(u, s, c, e)
           ON CONFLICT (user_id, schema_id) DO UPDATE SET claims = excluded.claims, expires_at = excluded.expires_at,
             updated_at = excluded.updated_at`,
          [
            batch.map((r) => r.userId),
            batch.map((r) => r.schemaId),
            batch.map((r) => JSON.stringify(r.claims)),
            batch.map((r) => r.expiresAt),
            now,
          ],
        );
      }
      if (audit)
        await insertAudit(client, {
          ...audit,
          at: now,
          action: 'claims.import',
          target: importTarget(records),
        });
    });
    return records.length;
  }

  async countClaims(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM claims');
    return rows[0]?.n ?? 0;
  }
}
