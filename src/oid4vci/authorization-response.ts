import { AppError } from '../errors.js';
import type { Oid4vciAuthorization } from '../store/store.js';
import { CODE_SECONDS } from './authorization-request.js';
import { providerClaims } from './claims.js';
import { invalidRequest } from './errors.js';
import { random, sha256 } from './library.js';
import { LoginFailure } from './login.js';
import type { AuthorizationCodeDeps, ChannelParts } from './parts.js';

/**
 * The authorization response (RFC 6749 §4.1.2, RFC 9207): the login provider sends the holder
 * back here; the sign-in is finished (login.ts) and the holder's browser goes on to the wallet's
 * redirect_uri with a single-use authorization code, or with `error`; both carry the wallet's
 * `state` and our `iss`. A failed sign-in issues nothing and is named in the log, never its tokens.
 */
export async function loginCallback(
  parts: ChannelParts,
  flow: AuthorizationCodeDeps,
  query: Record<string, unknown>,
): Promise<string> {
  const { state, code, error } = query;
  if (typeof state !== 'string' || state === '') throw invalidRequest('state is required');
  const loginHash = sha256(state);
  const now = parts.now();
  const authorization = await flow.store.authorizationByLogin(loginHash, now);
  if (!authorization) throw invalidRequest('this sign-in is unknown, finished or expired');
  const refuse = async (reason: string, params: Record<string, string>) => {
    await flow.store.refuseLogin(loginHash);
    parts.deps.log?.warn({ event: 'oid4vci_login_failed', reason }, 'holder sign-in failed');
    return walletRedirect(parts, authorization, params);
  };
  if (typeof error === 'string')
    return refuse(`the login provider answered error ${error.slice(0, 64)}`, {
      error: 'access_denied',
      error_description: 'the holder did not sign in',
    });
  if (typeof code !== 'string' || code === '') throw invalidRequest('code is required');
  let userId: string;
  try {
    userId = await flow.login.userOf(state, code, authorization.loginVerifier ?? '');
  } catch (err) {
    if (!(err instanceof LoginFailure)) throw err;
    return refuse(
      err.message,
      err.kind === 'unavailable'
        ? { error: 'temporarily_unavailable', error_description: 'the sign-in service cannot be reached' }
        : { error: 'access_denied', error_description: 'the sign-in could not be confirmed' },
    );
  }
  const denied = await deniedFor(parts, authorization, userId);
  if (denied) return refuse(denied, { error: 'access_denied', error_description: denied });
  const authorizationCode = random(32);
  const issued = await flow.store.issueCode(
    loginHash,
    { userId, codeHash: sha256(authorizationCode), expiresAt: new Date(now.getTime() + CODE_SECONDS * 1000) },
    now,
  );
  if (!issued) throw invalidRequest('this sign-in is finished');
  return walletRedirect(parts, authorization, { code: authorizationCode });
}

/** Why the signed-in user gets no code: not the user an offer was made for, or no such credential. */
async function deniedFor(
  parts: ChannelParts,
  authorization: Oid4vciAuthorization,
  userId: string,
): Promise<string | undefined> {
  if (authorization.offerHash !== null) {
    const offer = await parts.deps.store.offerByHash(authorization.offerHash);
    if (offer?.state !== 'offered') return 'the credential offer is no longer open';
    return offer.userId === userId ? undefined : 'the credential offer was made for another user';
  }
  const offered = parts.metadata.offered().find((c) => c.configurationId === authorization.configurationId);
  if (!offered) return 'this credential is no longer issued';
  try {
    await providerClaims(parts, offered.schema, userId, offered.proofType);
    return undefined;
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return 'the issuer has no such credential for this user';
    throw err;
  }
}

/** The wallet's redirect_uri with the response's parameters, its `state` and our `iss` (RFC 9207). */
export function walletRedirect(
  parts: ChannelParts,
  authorization: Oid4vciAuthorization,
  params: Record<string, string>,
): string {
  const url = new URL(authorization.redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  if (authorization.walletState !== null) url.searchParams.set('state', authorization.walletState);
  url.searchParams.set('iss', parts.deps.identity.urls.origin);
  return url.toString();
}
