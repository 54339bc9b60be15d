import { parsePushedAuthorizationRequestUriReferenceValue, type RequestLike } from '@openid4vc/oauth2';
import type { Oid4vciAuthorization } from '../store/store.js';
import {
  checkAuthorizationRequest,
  keepAuthorizationRequest,
  parseAuthorizationRequest,
} from './authorization-request.js';
import { walletRedirect } from './authorization-response.js';
import { fromLibrary, invalidRequest } from './errors.js';
import { random, sha256 } from './library.js';
import { LOGIN_SECONDS, LoginFailure, UpstreamLogin } from './login.js';
import type { AuthorizationCodeDeps, ChannelParts } from './parts.js';

/**
 * Authorization endpoint (RFC 6749 §4.1.1, OpenID4VCI 1.0 §5.1): the holder's browser arrives
 * with a pushed request's `request_uri` (RFC 9126 §4; single use, its own client's only) or, unless
 * OID4VCI_PROFILE=haip, with a plain request; it is sent on to sign in at the login provider
 * (login.ts). A request that cannot be trusted is answered here (400, RFC 6749 §4.1.2.1), never
 * by a redirect.
 */
export async function authorize(
  parts: ChannelParts,
  flow: AuthorizationCodeDeps,
  request: RequestLike,
  query: Record<string, unknown>,
): Promise<string> {
  const clientId = query.client_id;
  if (typeof clientId !== 'string' || clientId === '') throw invalidRequest('client_id is required');
  const now = parts.now();
  let requestHash: string;
  if (query.request_uri !== undefined) {
    if (typeof query.request_uri !== 'string') throw invalidRequest('request_uri is given more than once');
    let id: string;
    try {
      id = parsePushedAuthorizationRequestUriReferenceValue({ uri: query.request_uri });
    } catch (err) {
      throw fromLibrary(err, 'invalid request_uri');
    }
    requestHash = sha256(id);
  } else {
    if (flow.requirePar)
      throw invalidRequest(
        `this issuer takes pushed authorization requests only (RFC 9126): push it to ${parts.deps.identity.urls.oid4vciPar} first`,
      );
    requestHash = await keepPlainRequest(parts, flow, request, query);
  }
  const state = random(32);
  const verifier = UpstreamLogin.verifier();
  const authorization = await flow.store.startLogin(
    requestHash,
    clientId,
    { loginHash: sha256(state), verifier, expiresAt: new Date(now.getTime() + LOGIN_SECONDS * 1000) },
    now,
  );
  if (!authorization)
    throw invalidRequest('request_uri is unknown, used, expired or pushed by another client');
  return loginOrRefusal(parts, flow, authorization, state, verifier);
}

/** The login provider's sign-in page, or the wallet told why the holder cannot sign in now. */
async function loginOrRefusal(
  parts: ChannelParts,
  flow: AuthorizationCodeDeps,
  authorization: Oid4vciAuthorization,
  state: string,
  verifier: string,
): Promise<string> {
  try {
    return await flow.login.authorizationUrl(state, verifier);
  } catch (err) {
    if (!(err instanceof LoginFailure)) throw err;
    await flow.store.refuseLogin(sha256(state));
    parts.deps.log?.warn(
      { event: 'oid4vci_login_failed', reason: err.message },
      'login provider unavailable',
    );
    return walletRedirect(parts, authorization, {
      error: 'temporarily_unavailable',
      error_description: 'the sign-in service cannot be reached; try again later',
    });
  }
}

/** A plain authorization request (not pushed), checked and kept as a pushed one would be. */
async function keepPlainRequest(
  parts: ChannelParts,
  flow: AuthorizationCodeDeps,
  request: RequestLike,
  query: Record<string, unknown>,
): Promise<string> {
  if ('request' in query)
    throw invalidRequest('request objects are not supported: send the parameters themselves');
  const parsed = await parseAuthorizationRequest(parts, request, query, 'invalid authorization request');
  const checked = await checkAuthorizationRequest(parts, parsed.authorizationRequest);
  const dpopJkt = parsed.authorizationRequest.dpop_jkt ?? null;
  const id = await keepAuthorizationRequest(flow, checked, dpopJkt, parts.now());
  return sha256(id);
}
