import { pushedAuthorizationRequestUriPrefix, type RequestLike } from '@openid4vc/oauth2';
import {
  checkAuthorizationRequest,
  keepAuthorizationRequest,
  parseAuthorizationRequest,
  REQUEST_URI_SECONDS,
} from './authorization-request.js';
import { invalidDpopProof, invalidRequest } from './errors.js';
import type { AuthorizationCodeDeps, ChannelParts, ProtocolAnswer } from './parts.js';

/**
 * Pushed authorization request endpoint (RFC 9126): the wallet sends its authorization request
 * here first and gets a `request_uri` to send the holder's browser to the authorization endpoint
 * with. The request is checked as a whole (authorization-request.ts) and kept, single use, for
 * REQUEST_URI_SECONDS. A DPoP proof sent with it binds the authorization code to its key
 * (RFC 9449 §10.1), as does `dpop_jkt`.
 */
export async function pushAuthorization(
  parts: ChannelParts,
  flow: AuthorizationCodeDeps,
  request: RequestLike,
  body: Record<string, unknown>,
): Promise<ProtocolAnswer> {
  // JWT-secured requests (RFC 9101) are not taken: the library would go and fetch their keys.
  if ('request' in body || 'request_uri' in body)
    throw invalidRequest('request objects are not supported: send the parameters themselves');
  const parsed = await parseAuthorizationRequest(
    parts,
    request,
    body,
    'invalid pushed authorization request',
  );
  // The wallet attestation (client-attestation.ts): required under OID4VCI_PROFILE=haip.
  await parts.clientAttestation.verify(request, parsed.authorizationRequest.client_id);
  const checked = await checkAuthorizationRequest(parts, parsed.authorizationRequest);
  let dpopJkt = parsed.authorizationRequest.dpop_jkt ?? null;
  if (parsed.dpop?.jwt) {
    const jkt = await parts.dpop.verify({ request, jwt: parsed.dpop.jwt });
    if (dpopJkt !== null && dpopJkt !== jkt) throw invalidDpopProof('dpop_jkt is not the DPoP proof key');
    dpopJkt = jkt;
  }
  const now = parts.now();
  const id = await keepAuthorizationRequest(flow, checked, dpopJkt, now);
  // Requests nobody finished are dropped as new ones come.
  await flow.store.prune(new Date(now.getTime() - 3600 * 1000));
  const { pushedAuthorizationResponse } = parts.authorizationServer.createPushedAuthorizationResponse({
    requestUri: `${pushedAuthorizationRequestUriPrefix}${id}`,
    expiresInSeconds: REQUEST_URI_SECONDS,
  });
  return { status: 201, body: pushedAuthorizationResponse, headers: {} };
}
