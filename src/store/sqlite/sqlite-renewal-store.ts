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
import type { SqliteDatabase } from './database.js';
import type { SqliteAuditStore } from './sqlite-audit-store.js';
import type { SqliteWebhookStore } from './sqlite-webhook-store.js';

interface DueParams {
  schemaId: string;
  finishSince: string;
  from: string;
  until: string;
  limit: number;
}

/**
 * The sweep's read (RenewalStore.due): one range of `renewals_due`, from `finishSince` to `until`;
 * below `from` (expired) a row is taken only with a renewing credential recorded
 * (`issuances_renewed_from`), to finish it, never to start one.
 */
export const DUE_SQL = `SELECT r.credential_id FROM renewals r JOIN issuances i ON i.credential_id = r.credential_id
  WHERE r.schema_id = @schemaId AND r.outcome IS NULL AND r.expires_at > @finishSince AND r.expires_at <= @until
    AND i.channel = 'direct'
    AND ((r.expires_at > @from AND i.status = 0)
      OR EXISTS (SELECT 1 FROM issuances n WHERE n.renewed_from = r.credential_id))
  ORDER BY r.expires_at LIMIT @limit`;

interface Row {
  credential_id: string;
  schema_id: string;
  expires_at: string;
  recipient_sealed: string | null;
  claims_user_id: string | null;
  outcome: RenewalOutcome | null;
  renewed_by: string | null;
  outcome_at: string | null;
  detail: string | null;
}

/** The `renewals` table of migration 017. Dates are toISOString() text, as in `issuances`. */
export class SqliteRenewalStore implements RenewalStore {
  private readonly stmts;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly audit: SqliteAuditStore,
    private readonly webhooks: SqliteWebhookStore,
  ) {
    this.stmts = {
      add: db.prepare(
        `INSERT INTO renewals (credential_id, schema_id, expires_at, recipient_sealed, claims_user_id)
         VALUES (?, ?, ?, ?, ?) ON CONFLICT (credential_id) DO NOTHING`,
      ),
      drop: db.prepare(
        `DELETE FROM renewals WHERE credential_id = @id AND outcome IS NULL
           AND NOT EXISTS (SELECT 1 FROM issuances WHERE credential_id = @id)`,
      ),
      get: db.prepare<[string], Row>('SELECT * FROM renewals WHERE credential_id = ?'),
      due: db.prepare<DueParams, { credential_id: string }>(DUE_SQL),
      outcome: db.prepare(
        `INSERT INTO renewals (credential_id, schema_id, expires_at, outcome, renewed_by, outcome_at, detail)
         VALUES (@id, @schemaId, @expiresAt, @outcome, @renewedBy, @at, @detail)
         ON CONFLICT (credential_id) DO UPDATE SET outcome = excluded.outcome, renewed_by = excluded.renewed_by,
           outcome_at = excluded.outcome_at, detail = excluded.detail
         WHERE renewals.outcome IS NULL OR renewals.outcome != 'renewed'`,
      ),
      sealed: db.prepare<[string, number], { credential_id: string; recipient_sealed: string }>(
        `SELECT credential_id, recipient_sealed FROM renewals
         WHERE recipient_sealed IS NOT NULL AND credential_id > ? ORDER BY credential_id LIMIT ?`,
      ),
      replaceSealed: db.prepare(
        'UPDATE renewals SET recipient_sealed = @to WHERE credential_id = @id AND recipient_sealed = @from',
      ),
      reopen: db.prepare(
        `UPDATE renewals SET outcome = NULL, outcome_at = NULL, detail = NULL
         WHERE credential_id = @id AND recipient_sealed = @from AND outcome = 'not_renewable'`,
      ),
    } as const;
  }

  async sealedRecipients(after: string | null, limit: number): Promise<SealedRecipient[]> {
    return this.stmts.sealed
      .all(after ?? '', limit)
      .map((r) => ({ credentialId: r.credential_id, recipientSealed: r.recipient_sealed }));
  }

  async replaceSealedRecipients(rows: Array<SealedRecipient & { to: string }>): Promise<ReplacedRecipients> {
    return this.db
      .transaction(() => {
        const out: ReplacedRecipients = { resealed: 0, reopened: 0 };
        for (const r of rows) {
          const row = { id: r.credentialId, from: r.recipientSealed, to: r.to };
          out.reopened += this.stmts.reopen.run(row).changes;
          if (r.to !== r.recipientSealed) out.resealed += this.stmts.replaceSealed.run(row).changes;
        }
        return out;
      })
      .immediate();
  }

  async addSource(s: RenewalSource): Promise<void> {
    this.stmts.add.run(
      s.credentialId,
      s.schemaId,
      s.expiresAt.toISOString(),
      s.recipientSealed,
      s.claimsUserId,
    );
  }

  async dropSource(credentialId: string): Promise<void> {
    this.stmts.drop.run({ id: credentialId });
  }

  async get(credentialId: string): Promise<RenewalRecord | undefined> {
    const r = this.stmts.get.get(credentialId);
    return r ? toRecord(r) : undefined;
  }

  async due(schemaId: string, window: DueWindow, limit: number): Promise<string[]> {
    return this.stmts.due
      .all({
        schemaId,
        finishSince: window.finishSince.toISOString(),
        from: window.from.toISOString(),
        until: window.until.toISOString(),
        limit,
      })
      .map((r) => r.credential_id);
  }

  async recordOutcome(
    credentialId: string,
    schemaId: string,
    expiresAt: Date,
    w: RenewalOutcomeWrite,
  ): Promise<boolean> {
    return this.db
      .transaction(() => {
        const changed = this.stmts.outcome.run({
          id: credentialId,
          schemaId,
          expiresAt: expiresAt.toISOString(),
          outcome: w.outcome,
          renewedBy: w.renewedBy ?? null,
          at: w.at.toISOString(),
          detail: w.detail,
        }).changes;
        if (changed === 0) return false;
        this.audit.insertAudit({ ...w.audit, at: w.at, target: credentialId });
        if (w.event) this.webhooks.insertEvent(w.event, w.at);
        return true;
      })
      .immediate();
  }
}

function toRecord(r: Row): RenewalRecord {
  return {
    credentialId: r.credential_id,
    schemaId: r.schema_id,
    expiresAt: new Date(r.expires_at),
    recipientSealed: r.recipient_sealed,
    claimsUserId: r.claims_user_id,
    outcome: r.outcome,
    renewedBy: r.renewed_by,
    outcomeAt: r.outcome_at === null ? null : new Date(r.outcome_at),
    detail: r.detail,
  };
}
