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
  /** `offered` → `token` (the code exchanged) → `issued`; `locked` when its last tx_code check was wrong. */
  state: 'offered' | 'token' | 'issued' | 'locked';
  expiresAt: Date;
  tokenHash: string | null;
  tokenExpiresAt: Date | null;
  /** RFC 9449 §6: the JWK thumbprint the access token is bound to, when the wallet used DPoP. */
  dpopJkt: string | null;
  credentialId: string | null;
  /** The admin (key name) who made the offer: the actor of the issuance in the audit log. */
  createdBy: string;
  createdAt: Date;
}

export type NewOid4vciOffer = Omit<
  Oid4vciOffer,
  'txCodeAttempts' | 'state' | 'tokenHash' | 'tokenExpiresAt' | 'dpopJkt' | 'credentialId' | 'grantType'
> & { /** `pre-authorized_code` when not given. */ grantType?: Oid4vciOffer['grantType'] };

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
  /** `token` → `issued` with the credential it gave. */
  markIssued(offerHash: string, credentialId: string): Promise<boolean>;
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
