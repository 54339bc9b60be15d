import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type ErrorContext } from 'oidc-provider';

/**
 * A development OpenID Connect provider: panva's `oidc-provider` (a development dependency) with its
 * development sign-in pages (any user name, any password), keeping everything in memory. It plays
 * the login service an issuer signs holders in at (OID4VCI_LOGIN_ISSUER) for `npm run
 * login-provider` and for the tests; never for production.
 */
export interface DevLoginProviderOptions {
  port?: number;
  host?: string;
  clientId?: string;
  clientSecret?: string;
  /**
   * The issuer's redirect_uri. Unset: any `/oid4vci/login/callback` on a loopback address and any
   * port (the client is registered as a native application, RFC 8252 §7.3), so that the provider
   * can start before the issuer whose port it does not know yet.
   */
  redirectUri?: string;
  /** More of the issuer's client metadata (its authentication, keys…). */
  client?: Record<string, unknown>;
  /** More clients beside the issuer's. */
  clients?: Array<Record<string, unknown>>;
  /** The provider's signing keys (private JWKs); its own development key by default. */
  jwks?: { keys: Array<Record<string, unknown>> };
  /** A middleware around the provider's own (Koa's `use`), e.g. to see its answers. */
  middleware?: Parameters<Provider['use']>[0];
}

export interface DevLoginProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  provider: Provider;
  close(): Promise<void>;
}

export const DEV_LOGIN_CLIENT_ID = 'issuer-kit';
export const DEV_LOGIN_CLIENT_SECRET = 'development-only-login-secret';

export async function startDevLoginProvider(
  options: DevLoginProviderOptions = {},
): Promise<DevLoginProvider> {
  const server: Server = createServer();
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((done) => server.listen(options.port ?? 0, host, done));
  const issuer = `http://${host}:${(server.address() as AddressInfo).port}`;
  const clientId = options.clientId ?? DEV_LOGIN_CLIENT_ID;
  const clientSecret = options.clientSecret ?? DEV_LOGIN_CLIENT_SECRET;
  const provider = new Provider(issuer, {
    ...(options.jwks ? { jwks: options.jwks } : {}),
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        response_types: ['code'],
        grant_types: ['authorization_code'],
        ...(options.redirectUri
          ? { redirect_uris: [options.redirectUri] }
          : {
              application_type: 'native',
              redirect_uris: [
                'http://127.0.0.1/oid4vci/login/callback',
                'http://localhost/oid4vci/login/callback',
              ],
            }),
        ...options.client,
      },
      ...(options.clients ?? []),
    ],
    pkce: { required: () => true },
    // Short lives, and fresh cookie keys each start: nothing outlives the process anyway.
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      IdToken: 600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
    // Errors as JSON, without the development pages' warning printed once per process.
    renderError: async (ctx: ErrorContext, out: unknown) => {
      ctx.type = 'json';
      ctx.body = out;
    },
  });
  provider.on('server_error', () => {});
  if (options.middleware) provider.use(options.middleware);
  // After `use`: the handler is composed of the middleware registered so far.
  server.on('request', provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    provider,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

/**
 * The holder at the development sign-in pages, as a browser fills them (login, then consent),
 * cookies and all: from the provider's authorization URL to where it sends the browser back.
 */
export async function signInAtDevProvider(
  authorizationUrl: string,
  user: string,
  options: { abort?: boolean } = {},
): Promise<string> {
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
    if (options.abort) {
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
