import { INSERT_OFFER_COLUMNS, newOfferValues, type Oid4vciOfferRow, offerFromRow } from '../oid4vci-row.js';
import type { NewOid4vciOffer, Oid4vciOffer, Oid4vciStore } from '../store.js';
import type { PgPool } from './database.js';

type Row = Oid4vciOfferRow<string>;

/**
 * Offers and nonces of migration 013 (docs/interface.md "OpenID4VCI: the wallet door"). Each
 * change of state is one conditional UPDATE or DELETE: of two instances racing, one row changes.
 */
export class PostgresOid4vciStore implements Oid4vciStore {
  constructor(private readonly pool: PgPool) {}

  async createOffer(offer: NewOid4vciOffer): Promise<void> {
    await this.pool.query(
      `INSERT INTO oid4vci_offers (${INSERT_OFFER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      newOfferValues(offer),
    );
  }

  private async one(column: 'offer_hash' | 'code_hash' | 'token_hash', value: string) {
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

  async countWrongTxCode(
    offerHash: string,
    seenAttempts: number,
    maxAttempts: number,
  ): Promise<'offered' | 'locked' | undefined> {
    const { rows } = await this.pool.query<{ state: 'offered' | 'locked' }>(
      `UPDATE oid4vci_offers SET tx_code_attempts = tx_code_attempts + 1,
         state = CASE WHEN tx_code_attempts + 1 >= $1 THEN 'locked' ELSE state END
       WHERE offer_hash = $2 AND state = 'offered' AND tx_code_attempts = $3 RETURNING state`,
      [maxAttempts, offerHash, seenAttempts],
    );
    return rows[0]?.state;
  }

  async exchangeCode(
    offerHash: string,
    seenAttempts: number,
    token: { tokenHash: string; expiresAt: Date; dpopJkt: string | null },
    now: Date,
  ): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE oid4vci_offers SET state = 'token', token_hash = $1, token_expires_at = $2, dpop_jkt = $3
       WHERE offer_hash = $4 AND state = 'offered' AND tx_code_attempts = $5 AND expires_at > $6`,
      [token.tokenHash, token.expiresAt.getTime(), token.dpopJkt, offerHash, seenAttempts, now.getTime()],
    );
    return rowCount === 1;
  }

  async markIssued(offerHash: string, credentialId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE oid4vci_offers SET state = 'issued', credential_id = $1 WHERE offer_hash = $2 AND state = 'token'`,
      [credentialId, offerHash],
    );
    return rowCount === 1;
  }

  async createNonce(nonce: string, expiresAt: Date): Promise<void> {
    await this.pool.query('INSERT INTO oid4vci_nonces (nonce, expires_at) VALUES ($1, $2)', [
      nonce,
      expiresAt.getTime(),
    ]);
  }

  async takeNonce(nonce: string): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ expires_at: string }>(
      'DELETE FROM oid4vci_nonces WHERE nonce = $1 RETURNING expires_at',
      [nonce],
    );
    return rows[0] ? new Date(Number(rows[0].expires_at)) : undefined;
  }

  async prune(before: Date): Promise<number> {
    const at = before.getTime();
    const nonces = await this.pool.query('DELETE FROM oid4vci_nonces WHERE expires_at < $1', [at]);
    const offers = await this.pool.query(
      'DELETE FROM oid4vci_offers WHERE expires_at < $1 AND (token_expires_at IS NULL OR token_expires_at < $1)',
      [at],
    );
    return (nonces.rowCount ?? 0) + (offers.rowCount ?? 0);
  }
}
