import type { NewOid4vciOffer, Oid4vciOffer } from './store.js';

/** The `oid4vci_offers` columns as both engines return them (times in epoch ms). */
export interface Oid4vciOfferRow<Ms> {
  offer_hash: string;
  code_hash: string;
  schema_id: string;
  configuration_id: string;
  grant_type: Oid4vciOffer['grantType'];
  user_id: string;
  email_hash: string | null;
  claims: string | null;
  tx_code_hash: string | null;
  tx_code_attempts: number;
  state: Oid4vciOffer['state'];
  expires_at: Ms;
  token_hash: string | null;
  token_expires_at: Ms | null;
  dpop_jkt: string | null;
  credential_id: string | null;
  created_by: string;
  created_at: Ms;
  transaction_hash: string | null;
  transaction_expires_at: Ms | null;
  holder_jwks: string | null;
  retry_interval: number | null;
  pushed_claims: string | null;
  notification_hash: string | null;
  notification_event: string | null;
}

/** A row as the store's record (pg hands a BIGINT back as a string). */
export function offerFromRow(r: Oid4vciOfferRow<number | string>): Oid4vciOffer {
  return {
    offerHash: r.offer_hash,
    codeHash: r.code_hash,
    schemaId: r.schema_id,
    configurationId: r.configuration_id,
    grantType: r.grant_type,
    userId: r.user_id,
    emailHash: r.email_hash,
    claims: r.claims === null ? null : (JSON.parse(r.claims) as Record<string, unknown>),
    txCodeHash: r.tx_code_hash,
    txCodeAttempts: r.tx_code_attempts,
    state: r.state,
    expiresAt: new Date(Number(r.expires_at)),
    tokenHash: r.token_hash,
    tokenExpiresAt: r.token_expires_at === null ? null : new Date(Number(r.token_expires_at)),
    dpopJkt: r.dpop_jkt,
    credentialId: r.credential_id,
    deferral:
      r.transaction_hash === null
        ? null
        : {
            transactionHash: r.transaction_hash,
            expiresAt: new Date(Number(r.transaction_expires_at)),
            holderJwks: r.holder_jwks ?? '',
            interval: Number(r.retry_interval),
            pushedClaims:
              r.pushed_claims === null ? null : (JSON.parse(r.pushed_claims) as Record<string, unknown>),
          },
    notificationHash: r.notification_hash,
    notificationEvent: r.notification_event,
    createdBy: r.created_by,
    createdAt: new Date(Number(r.created_at)),
  };
}

/** The values of a new offer, in the column order of `INSERT_OFFER_COLUMNS`. */
export function newOfferValues(o: NewOid4vciOffer): Array<string | number | null> {
  return [
    o.offerHash,
    o.codeHash,
    o.schemaId,
    o.configurationId,
    o.userId,
    o.emailHash,
    o.claims === null ? null : JSON.stringify(o.claims),
    o.txCodeHash,
    'offered',
    o.expiresAt.getTime(),
    o.createdBy,
    o.createdAt.getTime(),
    o.grantType ?? 'pre-authorized_code',
  ];
}

export const INSERT_OFFER_COLUMNS =
  'offer_hash, code_hash, schema_id, configuration_id, user_id, email_hash, claims, tx_code_hash, state, expires_at, created_by, created_at, grant_type';
