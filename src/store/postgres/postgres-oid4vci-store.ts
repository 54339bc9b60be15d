import { INSERT_OFFER_COLUMNS, newOfferValues, type Oid4vciOfferRow, offerFromRow } from '../oid4vci-row.js';
import type {
  AuditEntry,
  DeferTransaction,
  NewOid4vciOffer,
  Oid4vciOffer,
  Oid4vciStore,
  RecordNotification,
} from '../store.js';
import { type PgPool, withTransaction } from './database.js';
import { insertAudit } from './postgres-audit-store.js';
import { insertEvent } from './postgres-webhook-store.js';

type Row = Oid4vciOfferRow<string>;

/**
 * Offers and nonces of migrations 017 and 026, deferred transactions and notifications of 029
 * (docs/interface.md "OpenID4VCI: the wallet door"). Each
 * change of state is one conditional UPDATE or DELETE: of two instances racing, one row changes.
 */
export class PostgresOid4vciStore implements Oid4vciStore {
  constructor(private readonly pool: PgPool) {}

  async createOffer(offer: NewOid4vciOffer): Promise<void> {
    await this.pool.query(
      `INSERT INTO oid4vci_offers (${INSERT_OFFER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      newOfferValues(offer),
    );
  }

  private async one(
    column: 'offer_hash' | 'code_hash' | 'token_hash' | 'transaction_hash' | 'notification_hash',
    value: string,
  ) {
    const { rows } = await this.pool.query<Row>(`SELECT * FROM oid4vci_offers WHERE ${column} = $1`, [value]);
    return rows[0] && offerFromRow(rows[0]);
  }

  offerByHash(offerHash: string): Promise<Oid4vciOffer | undefined> {
    return this.one('offer_hash', offerHash);
  }

  offerByCode(codeHash: string): Promise<Oid4vciOffer | undefined> {
    return this.one('code_hash', codeHash);
  }

  offerByToken(tokenHash: string): Promise<Oid4vciOffer | undefined> {
    return this.one('token_hash', tokenHash);
  }

  async takeTxCodeCheck(offerHash: string, maxChecks: number, now: Date): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ tx_code_attempts: number }>(
      `UPDATE oid4vci_offers SET tx_code_attempts = tx_code_attempts + 1
       WHERE offer_hash = $1 AND state = 'offered' AND tx_code_attempts < $2 AND expires_at > $3
       RETURNING tx_code_attempts`,
      [offerHash, maxChecks, now.getTime()],
    );
    return rows[0]?.tx_code_attempts;
  }

  async lockOffer(offerHash: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE oid4vci_offers SET state = 'locked' WHERE offer_hash = $1 AND state = 'offered'`,
      [offerHash],
    );
    return rowCount === 1;
  }

  async exchangeCode(
    offerHash: string,
    token: { tokenHash: string; expiresAt: Date; dpopJkt: string | null },
    now: Date,
  ): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE oid4vci_offers SET state = 'token', token_hash = $1, token_expires_at = $2, dpop_jkt = $3
       WHERE offer_hash = $4 AND state = 'offered' AND expires_at > $5`,
      [token.tokenHash, token.expiresAt.getTime(), token.dpopJkt, offerHash, now.getTime()],
    );
    return rowCount === 1;
  }

  async markIssued(
    offerHash: string,
    credentialId: string,
    notificationHash?: string | null,
  ): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE oid4vci_offers SET state = 'issued', credential_id = $1,
         notification_hash = coalesce($2::text, notification_hash)
       WHERE offer_hash = $3 AND (state IN ('token', 'deferred')
         OR (state = 'issued' AND notification_hash IS NULL AND $2::text IS NOT NULL))`,
      [credentialId, notificationHash ?? null, offerHash],
    );
    return rowCount === 1;
  }

  deferTransaction(offerHash: string, t: DeferTransaction): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `UPDATE oid4vci_offers SET state = 'deferred', transaction_hash = $1, transaction_expires_at = $2,
           token_expires_at = $2, holder_jwks = $3, retry_interval = $4, credential_id = $5
         WHERE offer_hash = $6 AND state = 'token' AND token_expires_at > $7`,
        [
          t.transactionHash,
          t.expiresAt.getTime(),
          t.holderJwks,
          t.interval,
          t.credentialId,
          offerHash,
          t.now.getTime(),
        ],
      );
      if (rowCount !== 1) return false;
      await insertEvent(client, t.event, t.now);
      return true;
    });
  }

  offerByTransaction(transactionHash: string): Promise<Oid4vciOffer | undefined> {
    return this.one('transaction_hash', transactionHash);
  }

  offerByNotification(notificationHash: string): Promise<Oid4vciOffer | undefined> {
    return this.one('notification_hash', notificationHash);
  }

  async deferredByCredential(credentialId: string): Promise<Oid4vciOffer | undefined> {
    const { rows } = await this.pool.query<Row>(
      "SELECT * FROM oid4vci_offers WHERE credential_id = $1 AND state = 'deferred'",
      [credentialId],
    );
    return rows[0] && offerFromRow(rows[0]);
  }

  supplyClaims(
    credentialId: string,
    claims: Record<string, unknown>,
    now: Date,
    audit: AuditEntry,
  ): Promise<Oid4vciOffer | undefined> {
    return withTransaction(this.pool, async (client) => {
      const { rows } = await client.query<Row>(
        `UPDATE oid4vci_offers SET pushed_claims = $1
         WHERE credential_id = $2 AND state = 'deferred' AND transaction_expires_at > $3 RETURNING *`,
        [JSON.stringify(claims), credentialId, now.getTime()],
      );
      if (!rows[0]) return undefined;
      await insertAudit(client, audit);
      return offerFromRow(rows[0]);
    });
  }

  recordNotification(n: RecordNotification): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `UPDATE oid4vci_offers SET notification_event = $1
         WHERE offer_hash = $2 AND notification_hash = $3 AND notification_event IS DISTINCT FROM $1`,
        [n.event, n.offerHash, n.notificationHash],
      );
      if (rowCount !== 1) return false;
      await insertAudit(client, n.audit);
      await insertEvent(client, n.webhookEvent, n.audit.at);
      return true;
    });
  }

  createNonce(nonce: string, expiresAt: Date): Promise<void> {
    return this.insertNonce('oid4vci_nonces', nonce, expiresAt);
  }

  takeNonce(nonce: string): Promise<Date | undefined> {
    return this.nonceExpiry('DELETE FROM oid4vci_nonces WHERE nonce = $1 RETURNING expires_at', nonce);
  }

  async rememberDpopProof(proofHash: string, expiresAt: Date, now: Date): Promise<boolean> {
    // Of two instances given one proof at once, the second waits on the first's row, then finds
    // it unexpired and changes nothing.
    const { rowCount } = await this.pool.query(
      `INSERT INTO oid4vci_dpop_proofs (proof_hash, expires_at) VALUES ($1, $2)
       ON CONFLICT (proof_hash) DO UPDATE SET expires_at = EXCLUDED.expires_at
       WHERE oid4vci_dpop_proofs.expires_at <= $3`,
      [proofHash, expiresAt.getTime(), now.getTime()],
    );
    return rowCount === 1;
  }

  createDpopNonce(nonce: string, expiresAt: Date): Promise<void> {
    return this.insertNonce('oid4vci_dpop_nonces', nonce, expiresAt);
  }

  dpopNonceExpiry(nonce: string): Promise<Date | undefined> {
    return this.nonceExpiry('SELECT expires_at FROM oid4vci_dpop_nonces WHERE nonce = $1', nonce);
  }

  private async insertNonce(
    table: 'oid4vci_nonces' | 'oid4vci_dpop_nonces',
    nonce: string,
    expiresAt: Date,
  ): Promise<void> {
    await this.pool.query(`INSERT INTO ${table} (nonce, expires_at) VALUES ($1, $2)`, [
      nonce,
      expiresAt.getTime(),
    ]);
  }

  /** The `expires_at` (epoch milliseconds, a bigint string from pg) of the nonce row `sql` returns. */
  private async nonceExpiry(sql: string, nonce: string): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ expires_at: string }>(sql, [nonce]);
    return rows[0] ? new Date(Number(rows[0].expires_at)) : undefined;
  }

  async prune(before: Date): Promise<number> {
    const at = before.getTime();
    let dropped = 0;
    for (const table of ['oid4vci_nonces', 'oid4vci_dpop_nonces', 'oid4vci_dpop_proofs']) {
      const { rowCount } = await this.pool.query(`DELETE FROM ${table} WHERE expires_at < $1`, [at]);
      dropped += rowCount ?? 0;
    }
    const offers = await this.pool.query(
      'DELETE FROM oid4vci_offers WHERE expires_at < $1 AND (token_expires_at IS NULL OR token_expires_at < $1)',
      [at],
    );
    return dropped + (offers.rowCount ?? 0);
  }
}
