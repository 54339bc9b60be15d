import { randomBytes } from 'node:crypto';
import { preAuthorizedCodeGrantIdentifier } from '@openid4vc/oauth2';
import { AppError, invalidParameter } from '../errors.js';
import { formatOf } from '../formats/index.js';
import type { AuditActor, ProofType } from '../model.js';
import { providerClaimsOrPending } from './claims.js';
import { random, sha256 } from './library.js';
import { configurationIdOf, PROOF_TYPE } from './metadata.js';
import type { ChannelParts } from './parts.js';

/**
 * Credential offers (OpenID4VCI 1.0 §4.1, the pre-authorized code grant or, with a login provider,
 * the authorization code grant with the offer id as `issuer_state`): made by an admin, served by
 * reference to the wallet.
 */

/** How long an offer (and its pre-authorized code) stays redeemable unless the admin says otherwise. */
export const DEFAULT_OFFER_SECONDS = 600;
/** The longest an admin may make an offer live. */
export const MAX_OFFER_SECONDS = 7 * 24 * 3600;
const TX_CODE_LENGTH = 6;

/**
 * The pre-authorized code of an offer, derived from its id one way: the served offer can carry it
 * while the database keeps neither in the clear (only the digests of both).
 */
const codeOf = (offerId: string): string => sha256(`openid4vci pre-authorized_code\u0000${offerId}`);

/** The transaction code's digest, salted with its offer's code digest. */
export const txCodeDigest = (codeHash: string, txCode: string): string =>
  sha256(`${codeHash}\u0000${txCode}`);

/** What an admin asks for (`POST /admin/credential-offers`), already shape-checked at the edge. */
export interface OfferRequest {
  schemaId: string;
  /** The format offered (the channel's default unless given: SD-JWT VC). */
  proofType?: ProofType | undefined;
  userId?: string | undefined;
  email?: string | undefined;
  claims?: Record<string, unknown> | undefined;
  txCode: boolean;
  expiresInSeconds: number;
  /**
   * How the wallet redeems it: its pre-authorized code (the default), or an authorization whose
   * `issuer_state` is the offer id, after the holder signs in as `userId` at the login provider.
   */
  grant?: 'pre-authorized_code' | 'authorization_code' | undefined;
  audit: AuditActor;
}

export interface CreatedOffer {
  offerId: string;
  credentialOffer: Record<string, unknown>;
  offerUri: string;
  txCode?: string;
  expiresAt: Date;
}

/**
 * A credential offer (OpenID4VCI 1.0 §4.1) by reference: the wallet fetches it from the offer
 * URL. The claims are checked now (the given ones against the schema, or the claims provider's
 * for `userId`), so an offer that cannot be redeemed is refused to the admin, not the wallet.
 */
export async function createOffer(parts: ChannelParts, req: OfferRequest): Promise<CreatedOffer> {
  const { deps, metadata } = parts;
  const schema = deps.identity.catalog.schemas.require(req.schemaId);
  const proofType = req.proofType ?? PROOF_TYPE;
  if (!metadata.offers(schema, proofType))
    throw invalidParameter(
      req.proofType === undefined ? 'schemaId' : 'proofType',
      `schema ${schema.schemaId} is not issued as ${proofType} through OpenID4VCI`,
    );
  const configurationId = configurationIdOf(schema.schemaId, formatOf(proofType));
  const byAuthorization = req.grant === 'authorization_code';
  if (byAuthorization) {
    if (!deps.authorizationCode)
      throw invalidParameter('grant', 'authorization_code needs a login provider (OID4VCI_LOGIN_ISSUER)');
    if (req.userId === undefined)
      throw invalidParameter(
        'userId',
        'required with grant authorization_code: the holder signs in as this user',
      );
    if (req.txCode) throw invalidParameter('txCode', 'not with grant authorization_code');
  }
  if (req.claims) deps.identity.catalog.schemas.assertClaims(schema, req.claims);
  else {
    if (req.userId === undefined)
      throw invalidParameter('claims', 'required with email (no claims provider key)');
    // Claims not ready yet ("pending") are no reason to refuse: the credential will be deferred.
    await providerClaimsOrPending(parts, schema, req.userId, proofType);
  }
  const emailHash = req.email === undefined ? null : await deps.hashEmail(req.email);
  const offerId = random(32);
  const code = codeOf(offerId);
  // An offer redeemed by an authorization has no pre-authorized code: its row's is never told.
  const codeHash = sha256(byAuthorization ? random(32) : code);
  const txCode = req.txCode ? randomDigits(TX_CODE_LENGTH) : undefined;
  const now = parts.now();
  const expiresAt = new Date(now.getTime() + req.expiresInSeconds * 1000);
  await deps.store.createOffer({
    offerHash: sha256(offerId),
    codeHash,
    schemaId: schema.schemaId,
    configurationId,
    // An offer by email has no claims provider key: the email's keyed hash stands in for it.
    userId: req.userId ?? `email:${emailHash}`,
    emailHash,
    claims: req.claims ?? null,
    txCodeHash: txCode === undefined ? null : txCodeDigest(codeHash, txCode),
    expiresAt,
    createdBy: req.audit.actor,
    createdAt: now,
    ...(byAuthorization ? { grantType: 'authorization_code' as const } : {}),
  });
  // Offers that nobody redeemed are dropped as new ones are made.
  await deps.store.prune(new Date(now.getTime() - 24 * 3600 * 1000));
  const { credentialOfferObject, credentialOffer } = await parts.issuer.createCredentialOffer({
    issuerMetadata: metadata.issuer(),
    credentialConfigurationIds: [configurationId],
    grants: byAuthorization
      ? { authorization_code: { issuer_state: offerId } }
      : { [preAuthorizedCodeGrantIdentifier]: grant(code, txCode !== undefined) },
    credentialOfferUri: metadata.endpoints.offer(offerId),
  });
  return {
    offerId,
    credentialOffer: credentialOfferObject,
    offerUri: credentialOffer,
    ...(txCode === undefined ? {} : { txCode }),
    expiresAt,
  };
}

/** The offer object served at its `credential_offer_uri` (OpenID4VCI 1.0 §4.1.3). */
export async function offerObject(parts: ChannelParts, offerId: string): Promise<Record<string, unknown>> {
  const offer = await parts.deps.store.offerByHash(sha256(offerId));
  if (offer?.state !== 'offered' || offer.expiresAt <= parts.now())
    throw new AppError('NOT_FOUND', 'no live credential offer with this id');
  return {
    credential_issuer: parts.deps.identity.urls.origin,
    credential_configuration_ids: [offer.configurationId],
    grants:
      offer.grantType === 'authorization_code'
        ? { authorization_code: { issuer_state: offerId } }
        : { [preAuthorizedCodeGrantIdentifier]: grant(codeOf(offerId), offer.txCodeHash !== null) },
  };
}

function grant(code: string, withTxCode: boolean) {
  return {
    'pre-authorized_code': code,
    ...(withTxCode
      ? {
          tx_code: {
            input_mode: 'numeric' as const,
            length: TX_CODE_LENGTH,
            description: 'The code the issuer gave you with this offer',
          },
        }
      : {}),
  };
}

function randomDigits(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomBytes(1)[0]!;
    // Rejection sampling: 250 is the largest multiple of 10 below 256.
    if (byte < 250) out += String(byte % 10);
  }
  return out;
}
