import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRemoteJWKSet, type JWTVerifyGetKey, errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import type { Oid4vciLoginConfig } from '../config/oid4vci-login-config.js';
import { random, sha256 } from './library.js';

/**
 * The issuer as a relying party of the OpenID Connect provider that signs holders in
 * (OID4VCI_LOGIN_ISSUER; OpenID Connect Core 1.0 §3.1, the authorization code flow): discovery, the
 * authorization request with PKCE S256, `state` and `nonce`, the code exchanged at the provider's
 * token endpoint with the issuer's client authentication, and the ID token checked with `jose`
 * against the provider's JWKS (signature, `iss`, `aud`, `azp`, expiry, `nonce`). What the flow
 * keeps of it is one user id: the ID token's OID4VCI_LOGIN_USER_CLAIM.
 */

/** How long a holder may take to sign in at the provider. */
export const LOGIN_SECONDS = 600;
const PROVIDER_TIMEOUT_MS = 10_000;

/** Why a sign-in gave no user: `unavailable` when the provider could not be reached or failed. */
export class LoginFailure extends Error {
  constructor(
    readonly kind: 'unavailable' | 'refused',
    message: string,
  ) {
    super(message);
    this.name = 'LoginFailure';
  }
}

const Discovery = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string().url(),
  token_endpoint: z.string().url(),
  jwks_uri: z.string().url(),
});
type Discovery = z.infer<typeof Discovery>;

/** The `nonce` of the ID token a sign-in asks for, derived from its state (both go through the browser). */
const nonceOf = (state: string): string => sha256(`openid4vci login nonce\u0000${state}`);

export interface UpstreamLoginOptions extends Oid4vciLoginConfig {
  /** OID4VCI_LOGIN_CLIENT_SECRET (client_secret_basic); otherwise the key file signs (private_key_jwt). */
  clientSecret?: string | undefined;
  /** The private_key_jwt key itself (PEM), over `clientKeyFile`: a tenant's own, from the registry. */
  clientKeyPem?: string | undefined;
  /** The issuer's redirect_uri at the provider (IssuerUrls.oid4vciLoginCallback). */
  redirectUri: string;
  now?: () => Date;
}

export class UpstreamLogin {
  private discovered: Promise<Discovery> | undefined;
  private jwks: JWTVerifyGetKey | undefined;
  private readonly clientKey: KeyObject | undefined;

  constructor(private readonly options: UpstreamLoginOptions) {
    const pem =
      options.clientKeyPem ??
      (options.clientKeyFile ? readFileSync(options.clientKeyFile, 'utf8') : undefined);
    this.clientKey = pem === undefined ? undefined : createPrivateKey(pem);
  }

  /** The provider's discovery document, fetched once (again after a failure). */
  private discovery(): Promise<Discovery> {
    this.discovered ??= (async () => {
      const url = `${this.options.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
      const body = await this.fetchJson(url, {}, 'discovery');
      const parsed = Discovery.safeParse(body);
      if (!parsed.success)
        throw new LoginFailure('unavailable', `the discovery document at ${url} is not usable`);
      if (parsed.data.issuer !== this.options.issuer)
        throw new LoginFailure('unavailable', `the discovery document names issuer ${parsed.data.issuer}`);
      this.jwks = createRemoteJWKSet(new URL(parsed.data.jwks_uri), { timeoutDuration: PROVIDER_TIMEOUT_MS });
      return parsed.data;
    })();
    this.discovered.catch(() => {
      this.discovered = undefined;
    });
    return this.discovered;
  }

  private async fetchJson(url: string, init: RequestInit, what: string): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS) });
    } catch (err) {
      throw new LoginFailure(
        'unavailable',
        `the login provider's ${what} did not answer (${(err as Error).message})`,
      );
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new LoginFailure(
        'unavailable',
        `the login provider's ${what} answered ${res.status} without JSON`,
      );
    }
    if (!res.ok) {
      // An OAuth error body names its code; nothing else of the answer is repeated.
      const error =
        typeof (body as { error?: unknown }).error === 'string' ? (body as { error: string }).error : '';
      throw new LoginFailure(
        res.status >= 500 ? 'unavailable' : 'refused',
        `the login provider's ${what} answered ${res.status}${error ? ` ${error}` : ''}`,
      );
    }
    return body;
  }

  /** A fresh PKCE verifier for one sign-in (kept by the flow, sent only to the token endpoint). */
  static verifier(): string {
    return random(32);
  }

  /** Where to send the holder to sign in: the provider's authorization endpoint for this `state`. */
  async authorizationUrl(state: string, verifier: string): Promise<string> {
    const discovery = await this.discovery();
    const url = new URL(discovery.authorization_endpoint);
    const params = {
      response_type: 'code',
      client_id: this.options.clientId,
      redirect_uri: this.options.redirectUri,
      scope: 'openid',
      state,
      nonce: nonceOf(state),
      code_challenge: sha256(verifier),
      code_challenge_method: 'S256',
    };
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    return url.toString();
  }

  /**
   * The user id of a finished sign-in: its code exchanged, its ID token checked. A `LoginFailure`
   * names what went wrong in words fit for the log (never a token).
   */
  async userOf(state: string, code: string, verifier: string): Promise<string> {
    const discovery = await this.discovery();
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: this.options.redirectUri,
      code_verifier: verifier,
    });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (this.clientKey) {
      form.set('client_id', this.options.clientId);
      form.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
      form.set('client_assertion', await this.clientAssertion(discovery));
    } else {
      // RFC 6749 §2.3.1: both form-encoded before they are joined.
      const id = encodeURIComponent(this.options.clientId);
      const secret = encodeURIComponent(this.options.clientSecret ?? '');
      headers.authorization = `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
    }
    const answer = await this.fetchJson(
      discovery.token_endpoint,
      { method: 'POST', headers, body: form.toString() },
      'token endpoint',
    );
    const idToken = (answer as { id_token?: unknown }).id_token;
    if (typeof idToken !== 'string')
      throw new LoginFailure('refused', 'the login provider answered no id_token');
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(idToken, this.jwks!, {
        issuer: discovery.issuer,
        audience: this.options.clientId,
        ...(this.options.now ? { currentDate: this.options.now() } : {}),
      }));
    } catch (err) {
      throw new LoginFailure(
        err instanceof joseErrors.JWKSTimeout ? 'unavailable' : 'refused',
        `the login provider's id_token was refused: ${describeJoseError(err)}`,
      );
    }
    const aud = payload.aud;
    if (Array.isArray(aud) && aud.length > 1 && payload.azp !== this.options.clientId)
      throw new LoginFailure('refused', "the login provider's id_token has another azp");
    if (payload.nonce !== nonceOf(state))
      throw new LoginFailure('refused', "the login provider's id_token has another nonce");
    const user = payload[this.options.userClaim];
    if ((typeof user !== 'string' || user === '') && typeof user !== 'number')
      throw new LoginFailure(
        'refused',
        `the login provider's id_token has no ${this.options.userClaim} claim`,
      );
    return String(user);
  }

  /** RFC 7523 §2.2 / OpenID Connect Core §9 `private_key_jwt`: ES256 over the client key. */
  private clientAssertion(discovery: Discovery): Promise<string> {
    return new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer(this.options.clientId)
      .setSubject(this.options.clientId)
      .setAudience(discovery.token_endpoint)
      .setJti(random(16))
      .setIssuedAt()
      .setExpirationTime('60s')
      .sign(this.clientKey!);
  }
}

/** jose's reason (its class and claim), without the token. */
function describeJoseError(err: unknown): string {
  if (err instanceof joseErrors.JWTClaimValidationFailed || err instanceof joseErrors.JWTExpired)
    return `${err.claim}: ${err.reason}`;
  if (err instanceof joseErrors.JOSEError) return err.code;
  return (err as Error).message;
}
