import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { capturingLogger } from '../helpers/log-capture.js';
import { type IdTokenChange, type LoginProvider, startLoginProvider } from '../helpers/login-provider.js';
import {
  followIssuerRedirect,
  receiveByAuthorizationCode,
  WALLET_REDIRECT,
} from '../helpers/oid4vci-auth-code-wallet.js';
import { sdJwtMembershipSchemas } from '../helpers/oid4vci-wallet.js';

/**
 * The issuer as the relying party of its login provider
 * (docs/interface.md "OpenID4VCI: the wallet door"; OpenID Connect Core 1.0 §3.1.3.7): a real provider (`oidc-provider`) signs the
 * holder in; an ID token for another audience, with another nonce, a forged signature or expired
 * is refused at the login callback: the wallet is sent back with `access_denied` (RFC 6749
 * §4.1.2.1), no code, nothing issued, the reason in the log and no token in it. And the issuer
 * authenticating to the provider with `private_key_jwt` (OID4VCI_LOGIN_CLIENT_KEY_FILE).
 */

const VERIFIER = 'dBjftJeZ4CVP-mJ92K9XKy1YlmfyjZpNEhSI5Xz3iA4';
const pushedRequest = {
  response_type: 'code',
  client_id: 'wallet-1',
  redirect_uri: WALLET_REDIRECT,
  scope: 'membership-v1',
  code_challenge: createHash('sha256').update(VERIFIER).digest('base64url'),
  code_challenge_method: 'S256',
  state: 'wallet-state',
};

async function issuances(issuer: TestIssuer): Promise<number> {
  const rows = await queryStore<{ n: number | string }>(
    issuer.ctx.store,
    "SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'",
  );
  return Number(rows[0]!.n);
}

/** An issuer whose login provider `prepare` starts once the issuer's origin is known. */
async function issuerWithProvider(
  provider: (redirectUri: string) => Promise<{ login: LoginProvider; env: Record<string, string> }>,
  log = capturingLogger(),
): Promise<{ issuer: TestIssuer; login: LoginProvider; logs: ReturnType<typeof capturingLogger> }> {
  const dir = tempDir();
  const env: Record<string, string> = { OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(dir) };
  let login: LoginProvider | undefined;
  const issuer = await startIssuer({
    dir,
    env,
    context: { log: log.log },
    prepare: async (_dir, origin) => {
      const started = await provider(`${origin}/oid4vci/login/callback`);
      login = started.login;
      Object.assign(env, { OID4VCI_LOGIN_ISSUER: login.issuer, ...started.env });
    },
  });
  return { issuer, login: login!, logs: log };
}

/**
 * A pushed request taken through the holder's sign-in; `atProvider` may change the URL the
 * browser is sent to at the provider. Answers the wallet's redirect.
 */
async function signInThrough(
  issuer: TestIssuer,
  login: LoginProvider,
  atProvider: (url: URL) => URL = (url) => url,
): Promise<{ back: URL; state: string }> {
  const pushed = await fetch(`${issuer.url}/oid4vci/par`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(pushedRequest).toString(),
  });
  expect(pushed.status, await pushed.clone().text()).toBe(201);
  const { request_uri } = (await pushed.json()) as { request_uri: string };
  const providerUrl = new URL(
    await followIssuerRedirect(
      `${issuer.url}/oid4vci/authorize?${new URLSearchParams({ client_id: 'wallet-1', request_uri })}`,
    ),
  );
  const state = providerUrl.searchParams.get('state')!;
  const callback = await login.signIn(atProvider(providerUrl).toString(), 'demo-user-1');
  return { back: new URL(await followIssuerRedirect(callback)), state };
}

describe('ID tokens the login callback refuses', () => {
  let issuer: TestIssuer;
  let login: LoginProvider;
  let logs: ReturnType<typeof capturingLogger>;

  beforeAll(async () => {
    ({ issuer, login, logs } = await issuerWithProvider(async (redirectUri) => {
      const provider = await startLoginProvider({ redirectUri });
      return {
        login: provider,
        env: {
          OID4VCI_LOGIN_CLIENT_ID: provider.clientId,
          OID4VCI_LOGIN_CLIENT_SECRET: provider.clientSecret,
        },
      };
    }));
  }, 120_000);
  afterAll(async () => {
    await issuer?.close();
    await login?.close();
  });

  /** The sign-in ends with access_denied, no code, nothing issued; the log names `reason`, no token. */
  async function expectRefused(
    change: IdTokenChange | undefined,
    reason: RegExp,
    atProvider?: (url: URL) => URL,
  ): Promise<void> {
    const before = await issuances(issuer);
    const logged = logs.lines.length;
    const sent: string[] = [];
    login.alterIdTokens(change && { ...change, sent });
    let result: { back: URL; state: string };
    try {
      result = await signInThrough(issuer, login, atProvider);
    } finally {
      login.alterIdTokens(undefined);
    }
    const { back, state } = result;
    expect(Object.fromEntries(back.searchParams)).toMatchObject({
      error: 'access_denied',
      state: 'wallet-state',
      iss: issuer.url,
    });
    expect(back.searchParams.has('code')).toBe(false);
    expect(await issuances(issuer)).toBe(before);
    const failures = logs
      .records()
      .slice(logged)
      .filter((r) => r.event === 'oid4vci_login_failed');
    expect(failures).toHaveLength(1);
    expect(String(failures[0]!.reason)).toMatch(reason);
    const written = logs.lines.slice(logged).join('\n');
    for (const token of sent) expect(written).not.toContain(token.split('.')[2]);
    // The sign-in is spent: its callback cannot be run again.
    const again = await fetch(
      `${issuer.url}/oid4vci/login/callback?${new URLSearchParams({ state, code: 'another' })}`,
      { redirect: 'manual' },
    );
    expect(again.status).toBe(400);
    expect(((await again.json()) as { error: string }).error).toBe('invalid_request');
  }

  it('an honest ID token gives the wallet a code (the provider unaltered)', async () => {
    const { back } = await signInThrough(issuer, login);
    expect(back.searchParams.get('code')).toBeTruthy();
    expect(back.searchParams.get('iss')).toBe(issuer.url);
  });

  it('another audience: aud naming another client', async () => {
    await expectRefused({ claims: (c) => ({ ...c, aud: 'another-relying-party' }) }, /aud/);
  });

  it('another audience: several, the authorized party another client', async () => {
    await expectRefused(
      {
        claims: (c) => ({
          ...c,
          aud: [c.aud as string, 'another-relying-party'],
          azp: 'another-relying-party',
        }),
      },
      /azp/,
    );
  });

  it('another nonce: the ID token of a sign-in the issuer did not start', async () => {
    await expectRefused(undefined, /nonce/, (url) => {
      url.searchParams.set('nonce', 'a-nonce-of-another-sign-in');
      return url;
    });
  });

  it('a forged signature: signed by a key the provider never published', async () => {
    await expectRefused({ claims: (c) => c, foreignKey: true }, /signature|JWS|no applicable key/i);
  });

  it('expired', async () => {
    const past = Math.floor(Date.now() / 1000) - 3600;
    await expectRefused({ claims: (c) => ({ ...c, iat: past - 600, exp: past }) }, /exp/);
  });

  it('another issuer', async () => {
    await expectRefused({ claims: (c) => ({ ...c, iss: 'https://login.elsewhere.example' }) }, /iss/);
  });
});

/** A P-256 key as the PKCS#8 PEM file OID4VCI_LOGIN_CLIENT_KEY_FILE names, and its public JWK. */
function clientKey(dir: string, name: string): { file: string; publicJwk: Record<string, unknown> } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const file = join(dir, `${name}.pem`);
  writeFileSync(file, (privateKey as KeyObject).export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  return { file, publicJwk: { ...publicKey.export({ format: 'jwk' }), kid: name, use: 'sig', alg: 'ES256' } };
}

/** The issuer's client at the provider, registered for `private_key_jwt` with `publicJwk`. */
const privateKeyJwtClient = (publicJwk: Record<string, unknown>) => ({
  client_secret: undefined,
  token_endpoint_auth_method: 'private_key_jwt',
  token_endpoint_auth_signing_alg: 'ES256',
  jwks: { keys: [publicJwk] },
});

describe('private_key_jwt (OID4VCI_LOGIN_CLIENT_KEY_FILE)', () => {
  const keys = tempDir();
  const registered = clientKey(keys, 'issuer-login-key');
  const unregistered = clientKey(keys, 'another-key');
  const running: Array<{ issuer: TestIssuer; login: LoginProvider }> = [];

  const withKey = async (file: string) => {
    const started = await issuerWithProvider(async (redirectUri) => {
      const provider = await startLoginProvider({
        redirectUri,
        client: privateKeyJwtClient(registered.publicJwk),
      });
      return {
        login: provider,
        env: { OID4VCI_LOGIN_CLIENT_ID: provider.clientId, OID4VCI_LOGIN_CLIENT_KEY_FILE: file },
      };
    });
    running.push(started);
    return started;
  };
  afterAll(async () => {
    for (const { issuer, login } of running) {
      await issuer.close();
      await login.close();
    }
  });

  it('the issuer authenticates with a signed client assertion: the wallet gets its credential', async () => {
    const { issuer, login } = await withKey(registered.file);
    const before = await issuances(issuer);
    const { credential } = await receiveByAuthorizationCode({
      issuerUrl: issuer.url,
      signIn: async (url) =>
        followIssuerRedirect(await login.signIn(await followIssuerRedirect(url), 'demo-user-1')),
    });
    expect((await verifySdJwtVc(issuer.url, credential)).claims).toMatchObject({ givenName: 'Alice' });
    expect(await issuances(issuer)).toBe(before + 1);
  }, 60_000);

  it('a key the provider does not know: the provider refuses the client, the wallet gets access_denied', async () => {
    const { issuer, login, logs } = await withKey(unregistered.file);
    const { back } = await signInThrough(issuer, login);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.has('code')).toBe(false);
    const failure = logs.records().find((r) => r.event === 'oid4vci_login_failed');
    expect(String(failure?.reason)).toMatch(/invalid_client/);
    expect(await issuances(issuer)).toBe(0);
  }, 60_000);
});
