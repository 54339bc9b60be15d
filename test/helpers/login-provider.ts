import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import Provider, { type ErrorContext } from 'oidc-provider';

/**
 * A real OpenID Connect provider (`oidc-provider`, panva's certified implementation) on loopback:
 * the login provider an issuer signs holders in at (OID4VCI_LOGIN_ISSUER). Its development sign-in
 * pages take any user name; `signIn` fills them over plain HTTP, as a browser would.
 */
export interface LoginProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Signs in as `user` from the provider's authorization URL; answers where it sends the browser back. */
  signIn(authorizationUrl: string, user: string, options?: { abort?: boolean }): Promise<string>;
  /**
   * From now on the provider's token endpoint answers an ID token changed by `change` (its claims
   * edited, then signed again with the provider's own key, or with `foreignKey`): a provider gone
   * wrong, or a token meant for someone else. `undefined` restores honest answers.
   */
  alterIdTokens(change: IdTokenChange | undefined): void;
  close(): Promise<void>;
}

export interface IdTokenChange {
  claims: (claims: Record<string, unknown>) => Record<string, unknown>;
  /** Signs with a key the provider never published (its `kid` kept): a forged signature. */
  foreignKey?: boolean;
  /** Each ID token as the issuer received it. */
  sent?: string[];
}

export interface LoginProviderOptions {
  redirectUri: string;
  /** More clients beside the issuer's (`issuer-kit`), e.g. another relying party. */
  clients?: Array<Record<string, unknown>>;
  /** The issuer's client: its authentication (default client_secret_basic) and more. */
  client?: Record<string, unknown>;
  port?: number;
}

export async function startLoginProvider(options: LoginProviderOptions): Promise<LoginProvider> {
  const server: Server = createServer();
  await new Promise<void>((done) => server.listen(options.port ?? 0, '127.0.0.1', done));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'issuer-kit';
  const clientSecret = 'a-login-provider-client-secret-for-tests-only';
  // The provider's signing key, ours so that a test can make it sign what a real provider would not.
  const signing = await generateKeyPair('RS256', { extractable: true });
  const foreign = await generateKeyPair('RS256');
  const signingJwk: JWK = { ...(await exportJWK(signing.privateKey)), kid: 'login-provider-1', use: 'sig' };
  const provider = new Provider(issuer, {
    jwks: { keys: [signingJwk] },
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        ...options.client,
      },
      ...(options.clients ?? []),
    ],
    pkce: { required: () => true },
    // Quiet: the development pages warn once per process.
    renderError: async (ctx: ErrorContext, out: unknown) => {
      ctx.type = 'json';
      ctx.body = out;
    },
  });
  provider.on('server_error', () => {});
  let alter: IdTokenChange | undefined;
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body as { id_token?: unknown } | undefined;
    if (!alter || ctx.path !== '/token' || typeof body?.id_token !== 'string') return;
    const header = decodeProtectedHeader(body.id_token);
    const altered = await new SignJWT(alter.claims(decodeJwt(body.id_token)))
      .setProtectedHeader({ alg: header.alg!, kid: header.kid!, ...(header.typ ? { typ: header.typ } : {}) })
      .sign(alter.foreignKey ? foreign.privateKey : signing.privateKey);
    body.id_token = altered;
    alter.sent?.push(altered);
  });
  server.on('request', provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    signIn: (url, user, signInOptions) => signIn(url, user, signInOptions?.abort ?? false),
    alterIdTokens: (change) => {
      alter = change;
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** The development sign-in (login, then consent) as a browser fills it, cookies and all. */
async function signIn(authorizationUrl: string, user: string, abort: boolean): Promise<string> {
  const jar = new Map<string, string>();
  const origin = new URL(authorizationUrl).origin;
  const request = async (url: string, form?: Record<string, string>) => {
    const res = await fetch(url, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const at = pair!.indexOf('=');
      jar.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return res;
  };
  let url = authorizationUrl;
  for (let step = 0; step < 12; step++) {
    const res = await request(url);
    const location = res.headers.get('location');
    if (location) {
      const next = new URL(location, url).toString();
      // Out of the provider: the browser goes back to its relying party.
      if (new URL(next).origin !== origin) return next;
      url = next;
      continue;
    }
    const page = await res.text();
    if (res.status !== 200)
      throw new Error(`the login provider answered ${res.status}: ${page.slice(0, 300)}`);
    const uid = /\/interaction\/([^/"?]+)/.exec(url)?.[1];
    if (!uid) throw new Error(`no sign-in page at ${url}`);
    if (abort) {
      url = `${origin}/interaction/${uid}/abort`;
      continue;
    }
    const prompt = page.includes('name="login"') ? 'login' : 'consent';
    const submitted = await request(`${origin}/interaction/${uid}`, {
      prompt,
      ...(prompt === 'login' ? { login: user, password: 'any' } : {}),
    });
    const next = submitted.headers.get('location');
    if (!next) throw new Error(`the ${prompt} page answered ${submitted.status}`);
    url = new URL(next, url).toString();
  }
  throw new Error('the sign-in did not end');
}
