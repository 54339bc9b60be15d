import type { NewWebhookEvent } from '../events/catalogue.js';
import type { AuditEntry } from './audit-store.js';

/**
 * A credential offer of the OpenID4VCI channel as stored (src/oid4vci/offers.ts). Secrets are
 * kept only as SHA-256 digests: the offer id, the pre-authorized code, the transaction code, the
 * access token.
 */
export interface Oid4vciOffer {
  offerHash: string;
  codeHash: string;
  schemaId: string;
  configurationId: string;
  /**
   * The grant that redeems the offer: its pre-authorized code, or an authorization whose
   * `issuer_state` is the offer id (the holder signs in first).
   */
  grantType: 'pre-authorized_code' | 'authorization_code';
  /** The claims provider's user id (or, for an offer made by email, a keyed hash of the email). */
  userId: string;
  emailHash: string | null;
  /** Inline claims given with the offer; null: the claims provider's for `userId`, at issuance. */
  claims: Record<string, unknown> | null;
  txCodeHash: string | null;
  /** Transaction codes compared for this offer (a bounded number, each counted before it is compared). */
  txCodeAttempts: number;
  /**
   * `offered` → `token` (the code exchanged) → `issued`, or `token` → `deferred` (the claims are
   * pending: the wallet polls with a transaction id) → `issued`; `locked` when its last tx_code
   * check was wrong.
   */
  state: 'offered' | 'token' | 'deferred' | 'issued' | 'locked';
  expiresAt: Date;
  tokenHash: string | null;
  tokenExpiresAt: Date | null;
  /** RFC 9449 §6: the JWK thumbprint the access token is bound to, when the wallet used DPoP. */
  dpopJkt: string | null;
  /** The credential it gave; while `deferred`, the id the credential will have. */
  credentialId: string | null;
  /** The deferred transaction (OpenID4VCI 1.0 §9), from `deferTransaction` on. */
  deferral: Oid4vciDeferral | null;
  /** SHA-256 of the notification id given with the credential (OpenID4VCI 1.0 §11). */
  notificationHash: string | null;
  /** The last notification event the wallet sent. */
  notificationEvent: string | null;
  /** The admin (key name) who made the offer: the actor of the issuance in the audit log. */
  createdBy: string;
  createdAt: Date;
}

export type NewOid4vciOffer = Omit<
  Oid4vciOffer,
  | 'txCodeAttempts'
  | 'state'
  | 'tokenHash'
  | 'tokenExpiresAt'
  | 'dpopJkt'
  | 'credentialId'
  | 'grantType'
  | 'deferral'
  | 'notificationHash'
  | 'notificationEvent'
> & { /** `pre-authorized_code` when not given. */ grantType?: Oid4vciOffer['grantType'] };

/** A deferred credential's transaction (OpenID4VCI 1.0 §9): bound to the offer's access token. */
export interface Oid4vciDeferral {
  /** SHA-256 of the transaction id the wallet was given. */
  transactionHash: string;
  expiresAt: Date;
  /** The proofs' public keys (a JSON array): one credential each, bound to it, when issued. */
  holderJwks: string;
  /** Seconds the wallet waits between polls. */
  interval: number;
  /** Claims an admin supplied; null: the claims provider is asked at each poll. */
  pushedClaims: Record<string, unknown> | null;
}

/** An offer's credential deferred: its transaction and the event that reports it. */
export interface DeferTransaction {
  transactionHash: string;
  expiresAt: Date;
  holderJwks: string;
  interval: number;
  credentialId: string;
  event: NewWebhookEvent;
  now: Date;
}

/** A notification the wallet sent (OpenID4VCI 1.0 §11), with its audit row and event. */
export interface RecordNotification {
  offerHash: string;
  notificationHash: string;
  event: string;
  audit: AuditEntry;
  webhookEvent: NewWebhookEvent;
}

/**
 * Offers, codes, tokens and nonces of the OpenID4VCI channel, in the database so that any instance
 * answers any step. Each change of state is one conditional write: of two instances racing on one
 * code, token or nonce, exactly one wins.
 */
export interface Oid4vciStore {
  createOffer(offer: NewOid4vciOffer): Promise<void>;
  offerByHash(offerHash: string): Promise<Oid4vciOffer | undefined>;
  offerByCode(codeHash: string): Promise<Oid4vciOffer | undefined>;
  offerByToken(tokenHash: string): Promise<Oid4vciOffer | undefined>;
  /**
   * Takes one transaction code check before the code is compared: counts it if the offer is still
   * `offered`, not expired at `now`, and has had fewer than `maxChecks` checks; answers the count
   * with this one. Undefined: no check is left (locked, used, expired or unknown). One statement,
   * so concurrent requests on any number of instances never get more than `maxChecks` between them.
   */
  takeTxCodeCheck(offerHash: string, maxChecks: number, now: Date): Promise<number | undefined>;
  /** `offered` → `locked`: the last transaction code check an offer had was wrong. */
  lockOffer(offerHash: string): Promise<boolean>;
  /**
   * `offered` → `token`: the pre-authorized code exchanged for an access token, if the offer is
   * still `offered` and not expired at `now`.
   */
  exchangeCode(
    offerHash: string,
    token: { tokenHash: string; expiresAt: Date; dpopJkt: string | null },
    now: Date,
  ): Promise<boolean>;
  /**
   * `token` (or `deferred`) → `issued` with the credential it gave and the digest of the
   * notification id given with it (null: none given: notifications are off, or this request found
   * the credential recorded by another). The request that signed sets its notification id even
   * when the other one marked the offer first.
   */
  markIssued(offerHash: string, credentialId: string, notificationHash?: string | null): Promise<boolean>;
  /**
   * `token` → `deferred`: the transaction is stored, the access token lives until it lapses, and
   * `credential.deferred` is written in the same transaction. False when the offer was not in
   * `token` any more (another request took it).
   */
  deferTransaction(offerHash: string, t: DeferTransaction): Promise<boolean>;
  offerByTransaction(transactionHash: string): Promise<Oid4vciOffer | undefined>;
  offerByNotification(notificationHash: string): Promise<Oid4vciOffer | undefined>;
  /** The offer whose credential `credentialId` is deferred (state `deferred`). */
  deferredByCredential(credentialId: string): Promise<Oid4vciOffer | undefined>;
  /**
   * An admin's claims for the deferred credential `credentialId`, whose transaction has not
   * lapsed at `now`, with the audit row; the offer, or undefined when there is no such transaction.
   */
  supplyClaims(
    credentialId: string,
    claims: Record<string, unknown>,
    now: Date,
    audit: AuditEntry,
  ): Promise<Oid4vciOffer | undefined>;
  /**
   * Records the wallet's notification, its audit row and its event in one transaction; false when
   * the same event was recorded last (nothing is recorded twice) or the id is not the offer's.
   */
  recordNotification(n: RecordNotification): Promise<boolean>;
  createNonce(nonce: string, expiresAt: Date): Promise<void>;
  /** Removes a nonce and answers its expiry; undefined when there is none (unknown or taken). */
  takeNonce(nonce: string): Promise<Date | undefined>;
  /**
   * RFC 9449 §11.1: records a DPoP proof (the digest of its key thumbprint and `jti`) until
   * `expiresAt`; false when it is recorded already and that record has not expired at `now` (a
   * replay). A wallet attestation's PoP is remembered here too, under a digest of its own kind.
   */
  rememberDpopProof(proofHash: string, expiresAt: Date, now: Date): Promise<boolean>;
  /** RFC 9449 §8: a server-provided DPoP nonce, accepted in any proof until `expiresAt`. */
  createDpopNonce(nonce: string, expiresAt: Date): Promise<void>;
  /** The expiry of a DPoP nonce this server gave; undefined when it gave none such. */
  dpopNonceExpiry(nonce: string): Promise<Date | undefined>;
  /**
   * Drops nonces (both kinds) and remembered DPoP proofs expired before `before`, and offers whose
   * offer and access token expired before it.
   */
  prune(before: Date): Promise<number>;
}
