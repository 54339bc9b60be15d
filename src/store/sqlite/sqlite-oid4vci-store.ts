import { INSERT_OFFER_COLUMNS, newOfferValues, type Oid4vciOfferRow, offerFromRow } from '../oid4vci-row.js';
import type {
  AuditEntry,
  DeferTransaction,
  NewOid4vciOffer,
  Oid4vciOffer,
  Oid4vciStore,
  RecordNotification,
} from '../store.js';
import type { SqliteDatabase } from './database.js';
import type { SqliteAuditStore } from './sqlite-audit-store.js';
import type { SqliteWebhookStore } from './sqlite-webhook-store.js';

/**
 * Offers and nonces of migrations 014 and 021, deferred transactions and notifications of 024
 * (docs/interface.md "OpenID4VCI: the wallet door").
 */
export class SqliteOid4vciStore implements Oid4vciStore {
  private readonly stmts;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly audit: SqliteAuditStore,
    private readonly webhooks: SqliteWebhookStore,
  ) {
    type Row = Oid4vciOfferRow<number>;
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO oid4vci_offers (${INSERT_OFFER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      byHash: db.prepare<[string], Row>('SELECT * FROM oid4vci_offers WHERE offer_hash = ?'),
      byCode: db.prepare<[string], Row>('SELECT * FROM oid4vci_offers WHERE code_hash = ?'),
      byToken: db.prepare<[string], Row>('SELECT * FROM oid4vci_offers WHERE token_hash = ?'),
      txCodeCheck: db.prepare<[string, number, number], { tx_code_attempts: number }>(
        `UPDATE oid4vci_offers SET tx_code_attempts = tx_code_attempts + 1
         WHERE offer_hash = ? AND state = 'offered' AND tx_code_attempts < ? AND expires_at > ?
         RETURNING tx_code_attempts`,
      ),
      lock: db.prepare(
        `UPDATE oid4vci_offers SET state = 'locked' WHERE offer_hash = ? AND state = 'offered'`,
      ),
      exchange: db.prepare(
        `UPDATE oid4vci_offers SET state = 'token', token_hash = @tokenHash, token_expires_at = @tokenExpiresAt,
           dpop_jkt = @dpopJkt
         WHERE offer_hash = @offerHash AND state = 'offered' AND expires_at > @now`,
      ),
      issued: db.prepare(
        `UPDATE oid4vci_offers SET state = 'issued', credential_id = @credentialId,
           notification_hash = coalesce(@notificationHash, notification_hash)
         WHERE offer_hash = @offerHash AND (state IN ('token', 'deferred')
           OR (state = 'issued' AND notification_hash IS NULL AND @notificationHash IS NOT NULL))`,
      ),
      defer: db.prepare(
        `UPDATE oid4vci_offers SET state = 'deferred', transaction_hash = @transactionHash,
           transaction_expires_at = @expiresAt, token_expires_at = @expiresAt, holder_jwks = @holderJwks,
           retry_interval = @interval, credential_id = @credentialId
         WHERE offer_hash = @offerHash AND state = 'token' AND token_expires_at > @now`,
      ),
      byTransaction: db.prepare<[string], Row>('SELECT * FROM oid4vci_offers WHERE transaction_hash = ?'),
      byNotification: db.prepare<[string], Row>('SELECT * FROM oid4vci_offers WHERE notification_hash = ?'),
      deferredBy: db.prepare<[string], Row>(
        "SELECT * FROM oid4vci_offers WHERE credential_id = ? AND state = 'deferred'",
      ),
      supply: db.prepare<[string, string, number], Row>(
        `UPDATE oid4vci_offers SET pushed_claims = ?
         WHERE credential_id = ? AND state = 'deferred' AND transaction_expires_at > ? RETURNING *`,
      ),
      notify: db.prepare(
        `UPDATE oid4vci_offers SET notification_event = @event
         WHERE offer_hash = @offerHash AND notification_hash = @notificationHash
           AND notification_event IS NOT @event`,
      ),
      insertNonce: db.prepare('INSERT INTO oid4vci_nonces (nonce, expires_at) VALUES (?, ?)'),
      takeNonce: db.prepare<[string], { expires_at: number }>(
        'DELETE FROM oid4vci_nonces WHERE nonce = ? RETURNING expires_at',
      ),
      rememberProof: db.prepare(
        `INSERT INTO oid4vci_dpop_proofs (proof_hash, expires_at) VALUES (?, ?)
         ON CONFLICT (proof_hash) DO UPDATE SET expires_at = excluded.expires_at
         WHERE oid4vci_dpop_proofs.expires_at <= ?`,
      ),
      insertDpopNonce: db.prepare('INSERT INTO oid4vci_dpop_nonces (nonce, expires_at) VALUES (?, ?)'),
      dpopNonce: db.prepare<[string], { expires_at: number }>(
        'SELECT expires_at FROM oid4vci_dpop_nonces WHERE nonce = ?',
      ),
      pruneNonces: db.prepare('DELETE FROM oid4vci_nonces WHERE expires_at < ?'),
      pruneDpopNonces: db.prepare('DELETE FROM oid4vci_dpop_nonces WHERE expires_at < ?'),
      pruneDpopProofs: db.prepare('DELETE FROM oid4vci_dpop_proofs WHERE expires_at < ?'),
      pruneOffers: db.prepare(
        'DELETE FROM oid4vci_offers WHERE expires_at < ? AND (token_expires_at IS NULL OR token_expires_at < ?)',
      ),
    };
  }

  async createOffer(offer: NewOid4vciOffer): Promise<void> {
    this.stmts.insert.run(...newOfferValues(offer));
  }

  async offerByHash(offerHash: string): Promise<Oid4vciOffer | undefined> {
    const row = this.stmts.byHash.get(offerHash);
    return row && offerFromRow(row);
  }

  async offerByCode(codeHash: string): Promise<Oid4vciOffer | undefined> {
    const row = this.stmts.byCode.get(codeHash);
    return row && offerFromRow(row);
  }

  async offerByToken(tokenHash: string): Promise<Oid4vciOffer | undefined> {
    const row = this.stmts.byToken.get(tokenHash);
    return row && offerFromRow(row);
  }

  async takeTxCodeCheck(offerHash: string, maxChecks: number, now: Date): Promise<number | undefined> {
    return this.stmts.txCodeCheck.get(offerHash, maxChecks, now.getTime())?.tx_code_attempts;
  }

  async lockOffer(offerHash: string): Promise<boolean> {
    return this.stmts.lock.run(offerHash).changes === 1;
  }

  async exchangeCode(
    offerHash: string,
    token: { tokenHash: string; expiresAt: Date; dpopJkt: string | null },
    now: Date,
  ): Promise<boolean> {
    return (
      this.stmts.exchange.run({
        offerHash,
        tokenHash: token.tokenHash,
        tokenExpiresAt: token.expiresAt.getTime(),
        dpopJkt: token.dpopJkt,
        now: now.getTime(),
      }).changes === 1
    );
  }

  async markIssued(
    offerHash: string,
    credentialId: string,
    notificationHash?: string | null,
  ): Promise<boolean> {
    return (
      this.stmts.issued.run({ credentialId, notificationHash: notificationHash ?? null, offerHash })
        .changes === 1
    );
  }

  async deferTransaction(offerHash: string, t: DeferTransaction): Promise<boolean> {
    return this.db
      .transaction(() => {
        const changed = this.stmts.defer.run({
          offerHash,
          transactionHash: t.transactionHash,
          expiresAt: t.expiresAt.getTime(),
          holderJwks: t.holderJwks,
          interval: t.interval,
          credentialId: t.credentialId,
          now: t.now.getTime(),
        }).changes;
        if (changed !== 1) return false;
        this.webhooks.insertEvent(t.event, t.now);
        return true;
      })
      .immediate();
  }

  async offerByTransaction(transactionHash: string): Promise<Oid4vciOffer | undefined> {
    const row = this.stmts.byTransaction.get(transactionHash);
    return row && offerFromRow(row);
  }

  async offerByNotification(notificationHash: string): Promise<Oid4vciOffer | undefined> {
    const row = this.stmts.byNotification.get(notificationHash);
    return row && offerFromRow(row);
  }

  async deferredByCredential(credentialId: string): Promise<Oid4vciOffer | undefined> {
    const row = this.stmts.deferredBy.get(credentialId);
    return row && offerFromRow(row);
  }

  async supplyClaims(
    credentialId: string,
    claims: Record<string, unknown>,
    now: Date,
    audit: AuditEntry,
  ): Promise<Oid4vciOffer | undefined> {
    return this.db
      .transaction(() => {
        const row = this.stmts.supply.get(JSON.stringify(claims), credentialId, now.getTime());
        if (!row) return undefined;
        this.audit.insertAudit(audit);
        return offerFromRow(row);
      })
      .immediate();
  }

  async recordNotification(n: RecordNotification): Promise<boolean> {
    return this.db
      .transaction(() => {
        const changed = this.stmts.notify.run({
          offerHash: n.offerHash,
          notificationHash: n.notificationHash,
          event: n.event,
        }).changes;
        if (changed !== 1) return false;
        this.audit.insertAudit(n.audit);
        this.webhooks.insertEvent(n.webhookEvent, n.audit.at);
        return true;
      })
      .immediate();
  }

  async createNonce(nonce: string, expiresAt: Date): Promise<void> {
    this.stmts.insertNonce.run(nonce, expiresAt.getTime());
  }

  async takeNonce(nonce: string): Promise<Date | undefined> {
    const row = this.stmts.takeNonce.get(nonce);
    return row ? new Date(row.expires_at) : undefined;
  }

  async rememberDpopProof(proofHash: string, expiresAt: Date, now: Date): Promise<boolean> {
    return this.stmts.rememberProof.run(proofHash, expiresAt.getTime(), now.getTime()).changes === 1;
  }

  async createDpopNonce(nonce: string, expiresAt: Date): Promise<void> {
    this.stmts.insertDpopNonce.run(nonce, expiresAt.getTime());
  }

  async dpopNonceExpiry(nonce: string): Promise<Date | undefined> {
    const row = this.stmts.dpopNonce.get(nonce);
    return row ? new Date(row.expires_at) : undefined;
  }

  async prune(before: Date): Promise<number> {
    const at = before.getTime();
    return (
      this.stmts.pruneNonces.run(at).changes +
      this.stmts.pruneDpopNonces.run(at).changes +
      this.stmts.pruneDpopProofs.run(at).changes +
      this.stmts.pruneOffers.run(at, at).changes
    );
  }
}
