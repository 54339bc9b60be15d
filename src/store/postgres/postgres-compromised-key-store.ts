import type { CompromisedKey, CompromisedKeyStore, CompromiseOutcome } from '../compromised-key-store.js';
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

  async outcome(kid: string): Promise<CompromiseOutcome | undefined> {
    const { rows } = await this.pool.query<CompromiseOutcome>(
      `SELECT rotated_to AS "rotatedTo", coalesce(lists_republished, 0) AS "statusListsRepublished", job_id AS "jobId"
       FROM compromised_keys WHERE kid = $1 AND job_id IS NOT NULL`,
      [kid],
    );
    return rows[0];
  }

  async recordOutcome(kid: string, outcome: CompromiseOutcome): Promise<void> {
    await this.pool.query(
      'UPDATE compromised_keys SET rotated_to = $2, lists_republished = $3, job_id = $4 WHERE kid = $1',
      [kid, outcome.rotatedTo, outcome.statusListsRepublished, outcome.jobId],
    );
  }
}
