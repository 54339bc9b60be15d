import type { RequestLike } from '@openid4vc/oauth2';
import type { Openid4vciIssuer } from '@openid4vc/openid4vci';
import { ProtocolError } from '../errors.js';
import type { Oid4vciOffer } from '../store/store.js';
import { issueBatch, issueSingle } from './batch.js';
import { denied, providerClaimsOrPending } from './claims.js';
import { credentialIdOf } from './credential-ids.js';
import { defer } from './deferred.js';
import { type ChallengeError, challengeHeader } from './dpop.js';
import { answerWith, requestedEncryption } from './encryption.js';
import {
  credentialRequestDenied,
  fromLibrary,
  invalidCredentialRequest,
  unauthorized,
  unknownCredentialConfiguration,
} from './errors.js';
import { SIGNING_ALGS, sha256 } from './library.js';
import { newNotificationId } from './notification.js';
import type { ChannelParts, ProtocolAnswer } from './parts.js';
import { holderKeysOf } from './proofs.js';
import { credentialRequestBody } from './request-encryption.js';

type CredentialRequest = ReturnType<Openid4vciIssuer['parseCredentialRequest']>;

/**
 * Credential endpoint (OpenID4VCI 1.0 §8): the access token (and its DPoP proof when bound to
 * one), the offer's credential configuration, its proofs (proofs.ts: one per credential, batch.ts; a `jwt` proof of possession,
 * `aud` this issuer, a nonce from the nonce endpoint, with a key attestation when the schema
 * requires one; or an `attestation` proof) whose key becomes `cnf.jwk`. Signed, recorded (channel
 * `oid4vci`) and only then answered; any refusal issues nothing.
 */
export async function credential(
  parts: ChannelParts,
  request: RequestLike,
  sent: Record<string, unknown>,
  encrypted?: string,
): Promise<ProtocolAnswer> {
  const { deps } = parts;
  const offer = await authorizeAccess(parts, request);
  const body = await credentialRequestBody(deps.requestDecryption, sent, encrypted);
  const { encryption, request: credentialRequest } = await requestedEncryption(
    body,
    deps.encryptionRequired ?? false,
  );
  const metadata = parts.metadata.issuer();
  const configurationId = body.credential_configuration_id;
  if (typeof configurationId === 'string' && !(configurationId in metadata.knownCredentialConfigurations))
    throw unknownCredentialConfiguration(`unknown credential_configuration_id ${configurationId}`);
  let parsed: CredentialRequest;
  try {
    parsed = parts.issuer.parseCredentialRequest({ issuerMetadata: metadata, credentialRequest });
  } catch (err) {
    throw fromLibrary(err, 'invalid credential request');
  }
  // OpenID4VCI 1.0 §6.2: after authorization_details, the token answered the configuration id as
  // the credential identifier.
  const asked =
    parsed.credentialConfigurationId ??
    (offer.grantType === 'authorization_code' ? parsed.credentialIdentifier : undefined);
  if (asked !== offer.configurationId)
    throw invalidCredentialRequest(
      `this access token is for credential_configuration_id ${offer.configurationId}`,
    );
  const proofType = parts.metadata.proofTypeOf(offer.configurationId, offer.schemaId);
  const schema = deps.identity.catalog.schemas.get(offer.schemaId);
  if (!schema || !parts.metadata.offers(schema, proofType))
    throw credentialRequestDenied('this credential is no longer issued');
  const holderJwks = await holderKeysOf(parts, parsed.proofs, metadata, schema, deps.batchSize ?? 1);

  // The admin's claims are checked by the core as it signs (a misfit is its CLAIMS_INVALID); the
  // claims provider's are checked here, once, and a misfit denies the request.
  let claims = offer.claims;
  if (claims === null) {
    const answer = await providerClaimsOrPending(parts, schema, offer.userId, proofType).catch(denied);
    // "Not ready yet": the credential is deferred (deferred.ts, OpenID4VCI 1.0 §9).
    if (answer.pending) {
      const pending = await defer(parts, { offer, holderJwks, answer });
      // §10: the 202 is encrypted like the credential would have been.
      return { ...(await answerWith(pending.body, encryption)), status: 202 };
    }
    claims = answer.claims;
  }
  const now = parts.now();
  if (holderJwks.length > 1) {
    const notification = newNotificationId(parts);
    const credentials = await issueBatch(parts, {
      offer,
      proofType,
      schema,
      claims,
      holderJwks,
      notificationHash: notification?.hash ?? null,
    });
    return answerWith(credentialResponse(parts.issuer, parsed, credentials, notification?.id), encryption);
  }
  const { credential, notificationId } = await issueSingle(parts, {
    offer,
    proofType,
    schema,
    claims,
    holderJwk: holderJwks[0]!,
    credentialId: credentialIdOf(offer.offerHash),
    claimsChecked: offer.claims === null,
    reason: 'OpenID4VCI credential offer',
    now,
  });
  if (credential === undefined)
    throw invalidCredentialRequest('the credential of this offer was already issued');
  return answerWith(credentialResponse(parts.issuer, parsed, [credential], notificationId), encryption);
}

/** The credential response (OpenID4VCI 1.0 §8.3) carrying the issued credentials, one per key. */
function credentialResponse(
  issuer: Openid4vciIssuer,
  credentialRequest: CredentialRequest,
  credentials: Array<string | Record<string, unknown>>,
  notificationId: string | undefined,
): Record<string, unknown> {
  return issuer.createCredentialResponse({
    credentialRequest,
    credentials: credentials.map((credential) => ({ credential })),
    ...(notificationId === undefined ? {} : { notificationId }),
  });
}

/**
 * RFC 6750 §2.1 / RFC 9449 §7: the offer an access token was given for, in one of `states` (the
 * credential endpoint: `token`; the deferred and notification endpoints say theirs).
 */
export async function authorizeAccess(
  parts: ChannelParts,
  request: RequestLike,
  states: ReadonlyArray<Oid4vciOffer['state']> = ['token'],
): Promise<Oid4vciOffer> {
  const { deps } = parts;
  const header = request.headers.get('authorization') ?? '';
  const [scheme, token] = header.split(' ', 2);
  // The challenge carries only server-chosen text (dpop.ts `challengeHeader`); the body may say more.
  const refuse = (
    error: ChallengeError,
    description: string,
    options: { challenge?: boolean; headers?: Record<string, string> } = {},
  ) =>
    unauthorized(
      error,
      description,
      challengeHeader({
        bearer: !deps.requireDpop,
        algs: SIGNING_ALGS,
        ...(options.challenge === false ? {} : { error }),
      }),
      options.headers,
    );
  if (!token || (scheme !== 'Bearer' && scheme !== 'DPoP'))
    throw refuse('invalid_token', 'an access token is required', { challenge: false });
  const offer = await deps.store.offerByToken(sha256(token));
  if (!offer || offer.tokenExpiresAt === null || offer.tokenExpiresAt <= parts.now())
    throw refuse('invalid_token', 'unknown or expired access token');
  if (!states.includes(offer.state))
    throw refuse(
      'invalid_token',
      offer.state === 'deferred'
        ? 'the credential of this access token is deferred: poll the deferred credential endpoint'
        : 'the credential of this access token was already issued',
    );
  if (offer.dpopJkt === null) {
    if (scheme === 'DPoP') throw refuse('invalid_token', 'this access token is not DPoP-bound');
    return offer;
  }
  if (scheme !== 'DPoP')
    throw refuse('invalid_token', 'this access token is DPoP-bound: use the DPoP scheme');
  const dpopJwt = request.headers.get('dpop');
  if (!dpopJwt) throw refuse('invalid_dpop_proof', 'a DPoP proof is required', { challenge: false });
  try {
    await parts.dpop.verify({
      request,
      jwt: dpopJwt,
      accessToken: token,
      expectedJwkThumbprint: offer.dpopJkt,
    });
  } catch (err) {
    if (!(err instanceof ProtocolError)) throw err;
    const error: ChallengeError = err.error === 'use_dpop_nonce' ? 'use_dpop_nonce' : 'invalid_dpop_proof';
    throw refuse(error, err.description, { headers: err.headers ?? {} });
  }
  return offer;
}
