import type { Oauth2AuthorizationServer, RequestLike } from '@openid4vc/oauth2';
import type { Oid4vciAuthorization, Oid4vciOffer } from '../store/store.js';
import { fromLibrary, invalidDpopProof, invalidGrant } from './errors.js';
import { random, sha256 } from './library.js';
import {
  ACCESS_TOKEN_SECONDS,
  type AuthorizationCodeDeps,
  type ChannelParts,
  type ProtocolAnswer,
} from './parts.js';

/**
 * The token endpoint's authorization code and refresh token grants (RFC 6749 §4.1.3 and §6,
 * OpenID4VCI 1.0 §6): a code once, before it expires, with the verifier of its PKCE challenge, the
 * redirect_uri and client it was issued for, and the DPoP key it was bound to; a refresh token
 * (OID4VCI_REFRESH_TOKENS=1) once, with the DPoP key of the grant, giving the next one. Each access
 * token is one offer row in the state `token`, so the credential endpoint serves it as any other.
 */

type Parsed = ReturnType<Oauth2AuthorizationServer['parseAccessTokenRequest']>;

/** Who made the offer row of a wallet that started on its own: the actor of its issuance. */
export const LOGIN_ACTOR = 'oid4vci-login';
const REFRESH_SECONDS = 30 * 24 * 3600;

export async function authorizationCodeToken(
  parts: ChannelParts,
  flow: AuthorizationCodeDeps,
  request: RequestLike,
  parsed: Parsed,
): Promise<ProtocolAnswer> {
  const { grant, accessTokenRequest } = parsed;
  if (grant.grantType !== 'authorization_code') throw invalidGrant('not an authorization code');
  const now = parts.now();
  // The DPoP proof first: a `use_dpop_nonce` answer (RFC 9449 §8) asks the wallet to send the
  // same request again with our nonce, so it must leave the code unspent.
  const dpopJwt = parsed.dpop?.jwt;
  if (parts.deps.requireDpop && !dpopJwt) throw invalidDpopProof('a DPoP proof is required');
  const dpopJkt = dpopJwt ? await parts.dpop.verify({ request, jwt: dpopJwt }) : null;
  // Taken before the grant is compared: a code is good for one try, right or wrong.
  const authorization = await flow.store.takeCode(sha256(grant.code), now);
  if (!authorization) throw invalidGrant('unknown, used or expired authorization code');
  const clientId = accessTokenRequest.client_id;
  if (clientId !== undefined && clientId !== authorization.clientId)
    throw invalidGrant('this authorization code was issued to another client');
  if (accessTokenRequest.redirect_uri !== authorization.redirectUri)
    throw invalidGrant('redirect_uri is not the one of the authorization request');
  // RFC 9449 §10: a code bound at the authorization request is redeemed with that key only.
  if (authorization.dpopJkt !== null && dpopJkt !== authorization.dpopJkt)
    throw invalidDpopProof(
      dpopJkt === null ? 'a DPoP proof is required' : 'the DPoP proof is not of the key the code is bound to',
    );
  // The wallet attestation (client-attestation.ts): required under OID4VCI_PROFILE=haip.
  await parts.clientAttestation.verify(request, authorization.clientId);
  try {
    await parts.authorizationServer.verifyAuthorizationCodeAccessTokenRequest({
      authorizationServerMetadata: parts.metadata.authorizationServer(),
      grant,
      accessTokenRequest,
      request,
      expectedCode: grant.code,
      pkce: {
        codeChallenge: authorization.codeChallenge,
        codeChallengeMethod: 'S256' as never,
        ...(parsed.pkceCodeVerifier === undefined ? {} : { codeVerifier: parsed.pkceCodeVerifier }),
      },
      now,
    });
  } catch (err) {
    throw fromLibrary(err, 'invalid token request');
  }
  const accessToken = await redeem(parts, authorization, dpopJkt, now);
  const refreshToken = flow.refreshTokens && dpopJkt !== null ? random(32) : null;
  await flow.store.setTokens(authorization.requestHash, {
    expiresAt: new Date(now.getTime() + ACCESS_TOKEN_SECONDS * 1000),
    dpopJkt,
    refreshHash: refreshToken === null ? null : sha256(refreshToken),
    refreshExpiresAt: refreshToken === null ? null : new Date(now.getTime() + REFRESH_SECONDS * 1000),
  });
  return tokenAnswer(parts, authorization, accessToken, dpopJkt, refreshToken);
}

export async function refreshTokenGrant(
  parts: ChannelParts,
  flow: AuthorizationCodeDeps,
  request: RequestLike,
  parsed: Parsed,
): Promise<ProtocolAnswer> {
  const { grant } = parsed;
  if (grant.grantType !== 'refresh_token') throw invalidGrant('not a refresh token');
  const dpopJwt = parsed.dpop?.jwt;
  if (!dpopJwt) throw invalidDpopProof('a refresh token is used with a DPoP proof of its key');
  const dpopJkt = await parts.dpop.verify({ request, jwt: dpopJwt });
  await parts.clientAttestation.verify(request, parsed.accessTokenRequest.client_id);
  const now = parts.now();
  const next = random(32);
  const authorization = await flow.store.rotateRefresh(
    sha256(grant.refreshToken),
    dpopJkt,
    {
      refreshHash: sha256(next),
      refreshExpiresAt: new Date(now.getTime() + REFRESH_SECONDS * 1000),
      expiresAt: new Date(now.getTime() + ACCESS_TOKEN_SECONDS * 1000),
    },
    now,
  );
  if (!authorization) throw invalidGrant('unknown, used or expired refresh token, or another DPoP key');
  const accessToken = await redeem(parts, { ...authorization, offerHash: null }, dpopJkt, now, authorization);
  return tokenAnswer(parts, authorization, accessToken, dpopJkt, next);
}

/**
 * The access token of an authorization: the offer it carried (`issuer_state`) redeemed, or a new
 * offer row for the signed-in user, moved to `token` at once.
 */
async function redeem(
  parts: ChannelParts,
  authorization: Oid4vciAuthorization,
  dpopJkt: string | null,
  now: Date,
  refreshed?: Oid4vciAuthorization,
): Promise<string> {
  const { store } = parts.deps;
  const accessToken = random(32);
  const token = {
    tokenHash: sha256(accessToken),
    expiresAt: new Date(now.getTime() + ACCESS_TOKEN_SECONDS * 1000),
    dpopJkt,
  };
  let offerHash = authorization.offerHash;
  if (offerHash === null) {
    // A refresh gives the same credential again: the first offer's claims and actor, if any.
    const first = refreshed?.offerHash ? await store.offerByHash(refreshed.offerHash) : undefined;
    const schemaId =
      first?.schemaId ??
      parts.metadata.offered().find((c) => c.configurationId === authorization.configurationId)?.schema
        .schemaId;
    if (schemaId === undefined) throw invalidGrant('this credential is no longer issued');
    offerHash = sha256(random(32));
    await store.createOffer(newOffer(offerHash, schemaId, authorization, first, now));
  }
  if (!(await store.exchangeCode(offerHash, token, now)))
    throw invalidGrant('the credential offer of this authorization was already redeemed');
  return accessToken;
}

function newOffer(
  offerHash: string,
  schemaId: string,
  a: Oid4vciAuthorization,
  first: Oid4vciOffer | undefined,
  now: Date,
) {
  return {
    offerHash,
    // Never told to anyone: the row is redeemed by this grant only.
    codeHash: sha256(random(32)),
    schemaId,
    configurationId: a.configurationId,
    userId: a.userId ?? '',
    emailHash: first?.emailHash ?? null,
    claims: first?.claims ?? null,
    txCodeHash: null,
    expiresAt: new Date(now.getTime() + ACCESS_TOKEN_SECONDS * 1000),
    createdBy: first?.createdBy ?? LOGIN_ACTOR,
    createdAt: now,
    grantType: 'authorization_code' as const,
  };
}

async function tokenAnswer(
  parts: ChannelParts,
  authorization: Oid4vciAuthorization,
  accessToken: string,
  dpopJkt: string | null,
  refreshToken: string | null,
): Promise<ProtocolAnswer> {
  return {
    body: {
      access_token: accessToken,
      token_type: dpopJkt ? 'DPoP' : 'Bearer',
      expires_in: ACCESS_TOKEN_SECONDS,
      ...(refreshToken === null ? {} : { refresh_token: refreshToken }),
      // OpenID4VCI 1.0 §6.2: the credential is then asked for by this identifier.
      ...(authorization.details === null
        ? {}
        : {
            authorization_details: authorization.details.map((d) => ({
              ...d,
              credential_identifiers: [authorization.configurationId],
            })),
          }),
    },
    headers: dpopJkt ? await parts.dpop.answerHeaders() : {},
  };
}
