import type {
  DueWindow,
  RenewalOutcome,
  RenewalOutcomeWrite,
  RenewalRecord,
  RenewalSource,
  RenewalStore,
  ReplacedRecipients,
  SealedRecipient,
} from '../renewal-store.js';
import { type PgPool, withTransaction } from './database.js';
import { insertAudit } from './postgres-audit-store.js';
import { insertEvent } from './postgres-webhook-store.js';

/**
 * The sweep's read (RenewalStore.due), as SQLite's DUE_SQL: one range of `renewals_due`, from
 * `finishSince` ($2) to `until` ($4); below `from` ($3, expired) a row is taken only with a
 * renewing credential recorded (`issuances_renewed_from`), to finish it, never to start one.
 * `OFFSET 0` keeps the EXISTS a probe of that index for each row of the range: without it the
 * planner may turn it into a hash of every issuance's `renewed_from`, a read of the whole table.
 */
export const DUE_SQL = `SELECT r.credential_id FROM renewals r JOIN issuances i ON i.credential_id = r.credential_id
  WHERE r.schema_id = $1 AND r.outcome IS NULL AND r.expires_at > $2 AND r.expires_at <= $4
    AND i.channel = 'direct'
    AND ((r.expires_at > $3 AND i.status = 0)
      OR EXISTS (SELECT 1 FROM issuances n WHERE n.renewed_from = r.credential_id OFFSET 0))
  ORDER BY r.expires_at LIMIT $5`;

interface Row {
  credential_id: string;
  schema_id: string;
  expires_at: Date;
  recipient_sealed: string | null;
  claims_user_id: string | null;
  outcome: RenewalOutcome | null;
  renewed_by: string | null;
  outcome_at: Date | null;
  detail: string | null;
}

/** The `renewals` table of migration 020. */
export class PostgresRenewalStore implements RenewalStore {
  constructor(private readonly pool: PgPool) {}

  async addSource(s: RenewalSource): Promise<void> {
    await this.pool.query({
      name: 'pg-renewal-add',
      text: `INSERT INTO renewals (credential_id, schema_id, expires_at, recipient_sealed, claims_user_id)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (credential_id) DO NOTHING`,
      values: [s.credentialId, s.schemaId, s.expiresAt, s.recipientSealed, s.claimsUserId],
    });
  }

  async dropSource(credentialId: string): Promise<void> {
    await this.pool.query(
      `DELETE FROM renewals WHERE credential_id = $1 AND outcome IS NULL
         AND NOT EXISTS (SELECT 1 FROM issuances WHERE credential_id = $1)`,
      [credentialId],
    );
  }

  async get(credentialId: string): Promise<RenewalRecord | undefined> {
    const { rows } = await this.pool.query<Row>('SELECT * FROM renewals WHERE credential_id = $1', [
      credentialId,
    ]);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async due(schemaId: string, window: DueWindow, limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ credential_id: string }>({
      name: 'pg-renewal-due',
      text: DUE_SQL,
      values: [schemaId, window.finishSince, window.from, window.until, limit],
    });
    return rows.map((r) => r.credential_id);
  }

  async recordOutcome(
    credentialId: string,
    schemaId: string,
    expiresAt: Date,
    w: RenewalOutcomeWrite,
  ): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `INSERT INTO renewals (credential_id, schema_id, expires_at, outcome, renewed_by, outcome_at, detail)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (credential_id) DO UPDATE SET outcome = excluded.outcome, renewed_by = excluded.renewed_by,
           outcome_at = excluded.outcome_at, detail = excluded.detail
         WHERE renewals.outcome IS NULL OR renewals.outcome <> 'renewed'`,
        [credentialId, schemaId, expiresAt, w.outcome, w.renewedBy ?? null, w.at, w.detail],
      );
      if (rowCount !== 1) return false;
      await insertAudit(client, { ...w.audit, at: w.at, target: credentialId });
      if (w.event) await insertEvent(client, w.event, w.at);
      return true;
    });
  }

  async sealedRecipients(after: string | null, limit: number): Promise<SealedRecipient[]> {
    const { rows } = await this.pool.query<{ credential_id: string; recipient_sealed: string }>(
      `SELECT credential_id, recipient_sealed FROM renewals
       WHERE recipient_sealed IS NOT NULL AND credential_id > $1 ORDER BY credential_id LIMIT $2`,
      [after ?? '', limit],
    );
    return rows.map((r) => ({ credentialId: r.credential_id, recipientSealed: r.recipient_sealed }));
  }

  async replaceSealedRecipients(rows: Array<SealedRecipient & { to: string }>): Promise<ReplacedRecipients> {
    if (rows.length === 0) return { resealed: 0, reopened: 0 };
    const ids = rows.map((r) => r.credentialId);
    const from = rows.map((r) => r.recipientSealed);
    return withTransaction(this.pool, async (client) => {
      const reopened = await client.query(
        `UPDATE renewals r SET outcome = NULL, outcome_at = NULL, detail = NULL
         FROM unnest($1::text[], $2::text[]) AS v(id, prev)
         WHERE r.credential_id = v.id AND r.recipient_sealed = v.prev AND r.outcome = 'not_renewable'`,
        [ids, from],
      );
      const resealed = await client.query(
        `UPDATE renewals r SET recipient_sealed = v.next
         FROM unnest($1::text[], $2::text[], $3::text[]) AS v(id, prev, next)
         WHERE r.credential_id = v.id AND r.recipient_sealed = v.prev AND v.prev <> v.next`,
        [ids, from, rows.map((r) => r.to)],
      );
      return { resealed: resealed.rowCount ?? 0, reopened: reopened.rowCount ?? 0 };
    });
  }
}

function toRecord(r: Row): RenewalRecord {
  return {
    credentialId: r.credential_id,
    schemaId: r.schema_id,
    expiresAt: r.expires_at,
    recipientSealed: r.recipient_sealed,
    claimsUserId: r.claims_user_id,
    outcome: r.outcome,
    renewedBy: r.renewed_by,
    outcomeAt: r.outcome_at,
    detail: r.detail,
  };
}
