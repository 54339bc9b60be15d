import type { Oauth2AuthorizationServer, RequestLike } from '@openid4vc/oauth2';
import type { Oid4vciAuthorization, Oid4vciOffer } from '../store/store.js';
import {
  fromLibrary,
  invalidAuthorizationDetails,
  invalidRequest,
  invalidScope,
  invalidTarget,
  unsupportedResponseType,
} from './errors.js';
import { random, sha256 } from './library.js';
import type { AuthorizationCodeDeps, ChannelParts } from './parts.js';

/**
 * The checks every authorization request passes, pushed (par.ts) or plain (authorize.ts):
 * RFC 6749 §4.1.1, PKCE with S256 only (RFC 7636 §4.3; `plain` is refused), one credential
 * configuration asked for by `scope` or by `authorization_details` of type `openid_credential`
 * (OpenID4VCI 1.0 §5.1), and the offer an `issuer_state` names (§5.1.3).
 */

/** How long a pushed request's request_uri, and an authorization code, can be used (single use). */
export const REQUEST_URI_SECONDS = 60;
export const CODE_SECONDS = 60;

/** An authorization request as the protocol library parses it (RFC 6749 §4.1.1, loose). */
export type AuthorizationRequest = Awaited<
  ReturnType<Oauth2AuthorizationServer['parsePushedAuthorizationRequest']>
>['authorizationRequest'];

/** An authorization request's parameters as the protocol library parses them, with its DPoP proof. */
export async function parseAuthorizationRequest(
  parts: ChannelParts,
  request: RequestLike,
  parameters: Record<string, unknown>,
  failure: string,
): Promise<Awaited<ReturnType<Oauth2AuthorizationServer['parsePushedAuthorizationRequest']>>> {
  try {
    return await parts.authorizationServer.parsePushedAuthorizationRequest({
      request,
      authorizationRequest: parameters,
    });
  } catch (err) {
    throw fromLibrary(err, failure);
  }
}

/**
 * Keeps a checked request, single use, for REQUEST_URI_SECONDS; returns the random id its
 * `request_uri` carries (only its hash is stored).
 */
export async function keepAuthorizationRequest(
  flow: AuthorizationCodeDeps,
  checked: CheckedRequest,
  dpopJkt: string | null,
  now: Date,
): Promise<string> {
  const id = random(32);
  await flow.store.createAuthorization({
    requestHash: sha256(id),
    clientId: checked.clientId,
    redirectUri: checked.redirectUri,
    codeChallenge: checked.codeChallenge,
    walletState: checked.walletState,
    configurationId: checked.configurationId,
    details: checked.details,
    offerHash: checked.offer?.offerHash ?? null,
    dpopJkt,
    expiresAt: new Date(now.getTime() + REQUEST_URI_SECONDS * 1000),
    createdAt: now,
  });
  return id;
}

/** An authorization request as the flow keeps it. */
export interface CheckedRequest
  extends Pick<
    Oid4vciAuthorization,
    'clientId' | 'redirectUri' | 'codeChallenge' | 'walletState' | 'configurationId' | 'details'
  > {
  offer: Oid4vciOffer | null;
}

const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export async function checkAuthorizationRequest(
  parts: ChannelParts,
  request: AuthorizationRequest,
): Promise<CheckedRequest> {
  for (const [name, value] of Object.entries(request))
    if (Array.isArray(value)) throw invalidRequest(`${name} is given more than once`);
  if ('request' in request || 'request_uri' in request)
    throw invalidRequest('request objects are not supported: send the parameters themselves');
  if (request.response_type !== 'code') throw unsupportedResponseType('response_type must be code');
  if (!request.redirect_uri) throw invalidRequest('redirect_uri is required');
  if (new URL(request.redirect_uri).hash) throw invalidRequest('redirect_uri must not have a fragment');
  if (request.code_challenge === undefined)
    throw invalidRequest('code_challenge is required (PKCE, RFC 7636)');
  if (request.code_challenge_method !== 'S256')
    throw invalidRequest('code_challenge_method must be S256 (plain is not accepted)');
  if (!CODE_CHALLENGE.test(request.code_challenge))
    throw invalidRequest('code_challenge must be the base64url SHA-256 of the code_verifier');
  if (request.resource !== undefined && request.resource !== parts.deps.identity.urls.origin)
    throw invalidTarget(`resource must be this credential issuer, ${parts.deps.identity.urls.origin}`);
  const { configurationId, details } = askedConfiguration(parts, request);
  let offer: Oid4vciOffer | null = null;
  if (request.issuer_state !== undefined) {
    const found = await parts.deps.store.offerByHash(sha256(request.issuer_state));
    if (
      found?.grantType !== 'authorization_code' ||
      found.state !== 'offered' ||
      found.expiresAt <= parts.now()
    )
      throw invalidRequest('issuer_state names no live credential offer');
    if (found.configurationId !== configurationId)
      throw invalidRequest(`the offer of this issuer_state is for ${found.configurationId}`);
    offer = found;
  }
  return {
    clientId: request.client_id,
    redirectUri: request.redirect_uri,
    codeChallenge: request.code_challenge,
    walletState: request.state ?? null,
    configurationId,
    details,
    offer,
  };
}

/** The one credential configuration asked for, and the `authorization_details` that asked. */
function askedConfiguration(
  parts: ChannelParts,
  request: AuthorizationRequest,
): { configurationId: string; details: Array<Record<string, unknown>> | null } {
  const known = parts.metadata.issuer().knownCredentialConfigurations;
  const raw = (request as Record<string, unknown>).authorization_details;
  if (raw !== undefined) {
    let details: unknown = raw;
    if (typeof raw === 'string') {
      try {
        details = JSON.parse(raw);
      } catch {
        throw invalidAuthorizationDetails('authorization_details is not JSON');
      }
    }
    if (!Array.isArray(details) || details.length !== 1)
      throw invalidAuthorizationDetails('authorization_details must ask for exactly one credential');
    const detail = details[0] as Record<string, unknown> | null;
    if (typeof detail !== 'object' || detail === null || detail.type !== 'openid_credential')
      throw invalidAuthorizationDetails('authorization_details must be of type openid_credential');
    const id = detail.credential_configuration_id;
    if (typeof id !== 'string' || !(id in known))
      throw invalidAuthorizationDetails('credential_configuration_id names no credential configuration here');
    return { configurationId: id, details: [detail] };
  }
  const scopes = (request.scope ?? '').split(' ').filter((s: string) => s !== '' && s !== 'openid');
  const asked = [...new Set<string>(scopes)].filter((scope) => scope in known);
  if (asked.length === 0) throw invalidScope('scope names no credential configuration here');
  if (asked.length > 1) throw invalidScope('scope must name one credential configuration');
  return { configurationId: asked[0]!, details: null };
}
