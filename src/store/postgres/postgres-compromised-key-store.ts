import type { CompromisedKey, CompromisedKeyStore } from '../compromised-key-store.js';
import type { AuditActor } from '../store.js';
import { type PgPool, withTransaction } from './database.js';
import { insertAudit } from './postgres-audit-store.js';

/** The `compromised_keys` table of migration 018. */
export class PostgresCompromisedKeyStore implements CompromisedKeyStore {
  constructor(private readonly pool: PgPool) {}

  async list(): Promise<CompromisedKey[]> {
    const { rows } = await this.pool.query<CompromisedKey>(
      'SELECT kid, at, actor, reason FROM compromised_keys ORDER BY at, kid',
    );
    return rows;
  }

  async mark(kid: string, at: Date, audit: AuditActor & { reason: string }): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        'INSERT INTO compromised_keys (kid, at, actor, reason) VALUES ($1, $2, $3, $4) ON CONFLICT (kid) DO NOTHING',
        [kid, at, audit.actor, audit.reason],
      );
      if (rowCount !== 1) return false;
      await insertAudit(client, { ...audit, at, action: 'keys.compromised', target: kid });
      return true;
    });
  }
}
