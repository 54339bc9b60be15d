import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { signInAtDevProvider, startDevLoginProvider } from '../../scripts/login-provider/provider.js';

/**
 * A real OpenID Connect provider (`oidc-provider`, panva's certified implementation) on loopback,
 * as `npm run login-provider` starts it: the login provider an issuer signs holders in at
 * (OID4VCI_LOGIN_ISSUER). Its development sign-in pages take any user name; `signIn` fills them
 * over plain HTTP, as a browser would.
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
  // The provider's signing key, ours so that a test can make it sign what a real provider would not.
  const signing = await generateKeyPair('RS256', { extractable: true });
  const foreign = await generateKeyPair('RS256');
  const signingJwk: JWK = { ...(await exportJWK(signing.privateKey)), kid: 'login-provider-1', use: 'sig' };
  let alter: IdTokenChange | undefined;
  const started = await startDevLoginProvider({
    ...(options.port === undefined ? {} : { port: options.port }),
    clientSecret: 'a-login-provider-client-secret-for-tests-only',
    redirectUri: options.redirectUri,
    ...(options.client ? { client: options.client } : {}),
    ...(options.clients ? { clients: options.clients } : {}),
    jwks: { keys: [signingJwk as Record<string, unknown>] },
    middleware: async (ctx, next) => {
      await next();
      const body = ctx.body as { id_token?: unknown } | undefined;
      if (!alter || ctx.path !== '/token' || typeof body?.id_token !== 'string') return;
      const header = decodeProtectedHeader(body.id_token);
      const altered = await new SignJWT(alter.claims(decodeJwt(body.id_token)))
        .setProtectedHeader({
          alg: header.alg!,
          kid: header.kid!,
          ...(header.typ ? { typ: header.typ } : {}),
        })
        .sign(alter.foreignKey ? foreign.privateKey : signing.privateKey);
      body.id_token = altered;
      alter.sent?.push(altered);
    },
  });
  return {
    issuer: started.issuer,
    clientId: started.clientId,
    clientSecret: started.clientSecret,
    signIn: (url, user, signInOptions) => signInAtDevProvider(url, user, signInOptions),
    alterIdTokens: (change) => {
      alter = change;
    },
    close: started.close,
  };
}
