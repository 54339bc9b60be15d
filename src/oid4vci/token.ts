import { timingSafeEqual } from 'node:crypto';
import {
  type Oauth2AuthorizationServer,
  preAuthorizedCodeGrantIdentifier,
  type RequestLike,
} from '@openid4vc/oauth2';
import { authorizationCodeToken, refreshTokenGrant } from './code-token.js';
import { fromLibrary, invalidDpopProof, invalidGrant, unsupportedGrantType } from './errors.js';
import { random, sha256 } from './library.js';
import { txCodeDigest } from './offers.js';
import { ACCESS_TOKEN_SECONDS, type ChannelParts, type ProtocolAnswer } from './parts.js';

/**
 * Transaction codes compared for one offer, at most: each check is counted before the code is
 * compared, so no burst of requests on any number of instances gets more; the offer is locked for
 * good when the last one is wrong.
 */
export const MAX_TX_CODE_ATTEMPTS = 5;

function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Token endpoint (OpenID4VCI 1.0 §6, RFC 6749 §5): the pre-authorized code, once, before its
 * offer expires, with the transaction code if the offer has one (at most MAX_TX_CODE_ATTEMPTS
 * compared); DPoP (RFC 9449) checked when sent, required with OID4VCI_REQUIRE_DPOP=1; the wallet
 * attestation checked when sent, required under OID4VCI_PROFILE=haip.
 */
export async function token(
  parts: ChannelParts,
  request: RequestLike,
  body: Record<string, unknown>,
): Promise<ProtocolAnswer> {
  const { deps, authorizationServer, dpop } = parts;
  let parsed: ReturnType<Oauth2AuthorizationServer['parseAccessTokenRequest']>;
  try {
    parsed = authorizationServer.parseAccessTokenRequest({ request, accessTokenRequest: body });
  } catch (err) {
    throw fromLibrary(err, 'invalid token request');
  }
  const { grant } = parsed;
  const flow = deps.authorizationCode;
  if (flow && grant.grantType === 'authorization_code')
    return authorizationCodeToken(parts, flow, request, parsed);
  if (flow?.refreshTokens && grant.grantType === 'refresh_token')
    return refreshTokenGrant(parts, flow, request, parsed);
  if (grant.grantType !== preAuthorizedCodeGrantIdentifier)
    throw unsupportedGrantType(
      flow ? 'this grant type is not offered here' : 'only the pre-authorized code grant is offered',
    );
  const offer = await deps.store.offerByCode(sha256(grant.preAuthorizedCode));
  const now = parts.now();
  // An offer redeemed by an authorization has no pre-authorized code.
  if (offer?.grantType !== 'pre-authorized_code') throw invalidGrant('unknown pre-authorized_code');
  if (offer.state === 'locked') throw invalidGrant('too many wrong tx_code values: the offer is locked');
  if (offer.state !== 'offered') throw invalidGrant('the pre-authorized_code was already used');
  if (offer.expiresAt <= now) throw invalidGrant('the pre-authorized_code has expired');
  // DPoP first: a proof refused (or sent back for a nonce) costs the offer no tx_code check.
  const dpopJwt = parsed.dpop?.jwt;
  if (deps.requireDpop && !dpopJwt) throw invalidDpopProof('a DPoP proof is required');
  const dpopJkt = dpopJwt ? await dpop.verify({ request, jwt: dpopJwt }) : null;
  // The wallet attestation (client-attestation.ts): required under OID4VCI_PROFILE=haip.
  await parts.clientAttestation.verify(request, body.client_id);
  try {
    await authorizationServer.verifyPreAuthorizedCodeAccessTokenRequest({
      authorizationServerMetadata: parts.metadata.authorizationServer(),
      grant,
      accessTokenRequest: parsed.accessTokenRequest,
      request,
      expectedPreAuthorizedCode: grant.preAuthorizedCode,
      // The library checks the tx_code's presence and absence; its value is compared below.
      expectedTxCode: offer.txCodeHash === null ? undefined : (grant.txCode ?? '\u0000missing'),
      preAuthorizedCodeExpiresAt: offer.expiresAt,
      now,
    });
  } catch (err) {
    throw fromLibrary(err, 'invalid token request');
  }
  if (offer.txCodeHash !== null && grant.txCode !== undefined) {
    // Counted before it is compared, in one conditional update: concurrent guesses on any
    // number of instances share MAX_TX_CODE_ATTEMPTS checks.
    const check = await deps.store.takeTxCodeCheck(offer.offerHash, MAX_TX_CODE_ATTEMPTS, now);
    if (check === undefined) throw invalidGrant('no tx_code check is left: the offer is locked or used');
    if (!sameDigest(txCodeDigest(offer.codeHash, grant.txCode), offer.txCodeHash)) {
      if (check < MAX_TX_CODE_ATTEMPTS) throw invalidGrant('wrong tx_code');
      // A right code being checked concurrently loses to this lock: the offer is under attack.
      await deps.store.lockOffer(offer.offerHash);
      throw invalidGrant('wrong tx_code; the offer is now locked');
    }
  }
  const accessToken = random(32);
  const taken = await deps.store.exchangeCode(
    offer.offerHash,
    {
      tokenHash: sha256(accessToken),
      expiresAt: new Date(now.getTime() + ACCESS_TOKEN_SECONDS * 1000),
      dpopJkt,
    },
    now,
  );
  // Another request took the code (or locked the offer) in between.
  if (!taken) throw invalidGrant('the pre-authorized_code was already used');
  return {
    body: {
      access_token: accessToken,
      token_type: dpopJkt ? 'DPoP' : 'Bearer',
      expires_in: ACCESS_TOKEN_SECONDS,
    },
    headers: dpopJkt ? await dpop.answerHeaders() : {},
  };
}
