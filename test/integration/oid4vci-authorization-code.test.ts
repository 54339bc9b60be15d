import { createHash, randomUUID } from 'node:crypto';
import { Oauth2Client, type Oauth2ClientOptions } from '@openid4vc/oauth2';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attester, jws, walletAttestation } from '../helpers/attesters.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { type LoginProvider, startLoginProvider } from '../helpers/login-provider.js';
import {
  followIssuerRedirect,
  receiveByAuthorizationCode,
  WALLET_REDIRECT,
} from '../helpers/oid4vci-auth-code-wallet.js';
import { holderKey, sdJwtMembershipSchemas } from '../helpers/oid4vci-wallet.js';

/**
 * The OpenID4VCI authorization code flow (docs/interface.md "OpenID4VCI: the wallet door") over
 * HTTP on loopback: the `@openid4vc/openid4vci` wallet client pushes its request, the holder signs
 * in at a real OpenID Connect provider (`oidc-provider`), the issuer as its relying party takes the
 * user id from the ID token, and the credential verifies with `@sd-jwt/sd-jwt-vc`. Bad input answers
 * the specification's error and issues nothing.
 */

let issuer: TestIssuer;
let provider: LoginProvider;

async function oid4vciIssuances(): Promise<number> {
  const rows = await queryStore<{ n: number | string }>(
    issuer.ctx.store,
    "SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'",
  );
  return Number(rows[0]!.n);
}

/** The holder's browser: the issuer's authorization endpoint, the provider's sign-in, back. */
const browser = (user: string) => async (issuerAuthorizationUrl: string) => {
  const atProvider = await followIssuerRedirect(issuerAuthorizationUrl);
  const callback = await provider.signIn(atProvider, user);
  return followIssuerRedirect(callback);
};

async function push(form: Record<string, string>, headers: Record<string, string> = {}) {
  return fetch(`${issuer.url}/oid4vci/par`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

const VERIFIER = 'dBjftJeZ4CVP-mJ92K9XKy1YlmfyjZpNEhSI5Xz3iA4';
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');

const goodRequest = {
  response_type: 'code',
  client_id: 'wallet-1',
  redirect_uri: WALLET_REDIRECT,
  scope: 'membership-v1',
  code_challenge: CHALLENGE,
  code_challenge_method: 'S256',
  state: 'wallet-state',
};

async function expectError(res: Response, status: number, error: string) {
  const body = (await res.json()) as { error: string; error_description: string };
  expect({ status: res.status, error: body.error }, body.error_description).toEqual({ status, error });
}

/** A pushed request taken through the sign-in: the wallet's redirect with its code. */
async function codeFor(form: Record<string, string>, user = 'demo-user-1'): Promise<URL> {
  const pushed = await push(form);
  expect(pushed.status, await pushed.clone().text()).toBe(201);
  const { request_uri } = (await pushed.json()) as { request_uri: string };
  const url = `${issuer.url}/oid4vci/authorize?${new URLSearchParams({ client_id: form.client_id!, request_uri })}`;
  return new URL(await browser(user)(url));
}

async function token(form: Record<string, string>) {
  return fetch(`${issuer.url}/oid4vci/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
}

/** Another issuer with `extra` settings and a login provider of its own (its callback registered). */
async function issuerWithLogin(
  extra: Record<string, string>,
): Promise<{ issuer: TestIssuer; login: LoginProvider }> {
  const dir = tempDir();
  const env: Record<string, string> = { OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(dir), ...extra };
  let login: LoginProvider | undefined;
  const started = await startIssuer({
    dir,
    env,
    prepare: async (_dir, origin) => {
      login = await startLoginProvider({ redirectUri: `${origin}/oid4vci/login/callback` });
      Object.assign(env, {
        OID4VCI_LOGIN_ISSUER: login.issuer,
        OID4VCI_LOGIN_CLIENT_ID: login.clientId,
        OID4VCI_LOGIN_CLIENT_SECRET: login.clientSecret,
      });
    },
  });
  return { issuer: started, login: login! };
}

beforeAll(async () => {
  const dir = tempDir();
  const env: Record<string, string> = { OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(dir) };
  issuer = await startIssuer({
    dir,
    env,
    prepare: async (_dir, origin) => {
      provider = await startLoginProvider({ redirectUri: `${origin}/oid4vci/login/callback` });
      Object.assign(env, {
        OID4VCI_LOGIN_ISSUER: provider.issuer,
        OID4VCI_LOGIN_CLIENT_ID: provider.clientId,
        OID4VCI_LOGIN_CLIENT_SECRET: provider.clientSecret,
        OID4VCI_REFRESH_TOKENS: '1',
      });
    },
  });
}, 120_000);
afterAll(async () => {
  await issuer?.close();
  await provider?.close();
});

describe('metadata', () => {
  it('advertises the authorization code grant, PAR, PKCE S256, iss and a scope per configuration', async () => {
    const meta = (await (
      await fetch(`${issuer.url}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({
      issuer: issuer.url,
      authorization_endpoint: `${issuer.url}/oid4vci/authorize`,
      pushed_authorization_request_endpoint: `${issuer.url}/oid4vci/par`,
      require_pushed_authorization_requests: false,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(meta.grant_types_supported).toContain('authorization_code');
    const issuerMeta = (await (await fetch(`${issuer.url}/.well-known/openid-credential-issuer`)).json()) as {
      credential_configurations_supported: Record<string, { scope?: string }>;
    };
    expect(issuerMeta.credential_configurations_supported['membership-v1']!.scope).toBe('membership-v1');
  });
});

describe('a wallet completes the authorization code flow', () => {
  it('on its own from the metadata: the signed-in user’s credential, verifiable and revocable', async () => {
    const before = await oid4vciIssuances();
    const { credential, holder } = await receiveByAuthorizationCode({
      issuerUrl: issuer.url,
      signIn: browser('demo-user-1'),
    });
    const verified = await verifySdJwtVc(issuer.url, credential);
    expect(verified.claims).toMatchObject({ givenName: 'Alice', tier: 'gold' });
    const payload = verified.payload as Record<string, any>;
    expect(payload.cnf.jwk).toEqual(holder.publicJwk);
    expect(await oid4vciIssuances()).toBe(before + 1);
    const history = (await (
      await issuer.admin(`/admin/issuance-history?holderDid=${encodeURIComponent(payload.sub)}`)
    ).json()) as { data: Array<{ revocationNonce: string; statusList: { idx: number; uri: string } }> };
    const record = history.data[0]!;
    expect((await issuer.admin('/admin/revoke', { revocationNonce: record.revocationNonce })).status).toBe(
      200,
    );
    const list = await (await fetch(record.statusList.uri)).text();
    expect(getListFromStatusListJWT(list).getStatus(record.statusList.idx)).toBe(1);
  });

  it('from an admin’s offer with issuer_state, by authorization_details', async () => {
    const res = await issuer.admin('/admin/credential-offers', {
      schemaId: 'membership-v1',
      userId: 'demo-user-2',
      grant: 'authorization_code',
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const offer = (await res.json()) as { offerId: string; offerUri: string; credentialOffer: any };
    expect(offer.credentialOffer.grants).toEqual({ authorization_code: { issuer_state: offer.offerId } });
    const { credential, accessTokenResponse } = await receiveByAuthorizationCode({
      issuerUrl: issuer.url,
      offerUri: offer.offerUri,
      details: true,
      signIn: browser('demo-user-2'),
    });
    expect(accessTokenResponse.authorization_details).toEqual([
      {
        type: 'openid_credential',
        credential_configuration_id: 'membership-v1',
        credential_identifiers: ['membership-v1'],
      },
    ]);
    expect((await verifySdJwtVc(issuer.url, credential)).claims).toMatchObject({ givenName: 'Bram' });
    // The offer is redeemed: its object is gone, its pre-authorized path was never open.
    expect((await fetch(`${issuer.url}/oid4vci/offers/${offer.offerId}`)).status).toBe(404);
  });
});

describe('refresh tokens (OID4VCI_REFRESH_TOKENS=1)', () => {
  it('a fresh credential for the same grant with the DPoP key; used once; never with another key', async () => {
    const run = await receiveByAuthorizationCode({ issuerUrl: issuer.url, signIn: browser('demo-user-1') });
    const refreshToken = run.accessTokenResponse.refresh_token as string;
    expect(typeof refreshToken).toBe('string');
    const oauth2 = new Oauth2Client({
      callbacks: (run.wallet as unknown as { options: { callbacks: Oauth2ClientOptions['callbacks'] } })
        .options.callbacks,
    });
    const authorizationServerMetadata = run.issuerMetadata.authorizationServers[0]!;
    const before = await oid4vciIssuances();
    // Another key (the wallet's credential key, not its DPoP key): refused, the token kept.
    await expect(
      oauth2.retrieveRefreshTokenAccessToken({
        authorizationServerMetadata,
        refreshToken,
        dpop: { signer: run.holder.signer, nonce: run.tokenDpop.nonce },
      }),
    ).rejects.toThrow(/invalid_grant|invalid_dpop_proof|use_dpop_nonce/);
    const refreshed = await oauth2.retrieveRefreshTokenAccessToken({
      authorizationServerMetadata,
      refreshToken,
      dpop: run.tokenDpop,
    });
    expect(refreshed.accessTokenResponse.refresh_token).not.toBe(refreshToken);
    const { c_nonce } = await run.wallet.requestNonce({ issuerMetadata: run.issuerMetadata });
    const { jwt } = await run.wallet.createCredentialRequestJwtProof({
      issuerMetadata: run.issuerMetadata,
      signer: run.holder.signer,
      nonce: c_nonce,
      credentialConfigurationId: 'membership-v1',
    });
    const { credentialResponse } = await run.wallet.retrieveCredentials({
      issuerMetadata: run.issuerMetadata,
      accessToken: refreshed.accessTokenResponse.access_token,
      credentialConfigurationId: 'membership-v1',
      proofs: { jwt: [jwt] },
      dpop: refreshed.dpop!,
    });
    const fresh = (credentialResponse.credentials![0] as { credential: string }).credential;
    expect((await verifySdJwtVc(issuer.url, fresh)).claims).toMatchObject({ givenName: 'Alice' });
    expect(await oid4vciIssuances()).toBe(before + 1);
    // Used once: the first refresh token is spent.
    await expect(
      oauth2.retrieveRefreshTokenAccessToken({
        authorizationServerMetadata,
        refreshToken,
        dpop: refreshed.dpop!,
      }),
    ).rejects.toThrow(/invalid_grant/);
  });
});

describe('bad input and faults: the specification’s error, nothing issued', () => {
  it('PAR without PKCE, with plain, without redirect_uri, for an unknown scope', async () => {
    const { code_challenge_method: _m, ...noMethod } = goodRequest;
    const { code_challenge: _c, ...noChallenge } = goodRequest;
    const { redirect_uri: _r, ...noRedirect } = goodRequest;
    await expectError(await push(noChallenge), 400, 'invalid_request');
    await expectError(await push(noMethod), 400, 'invalid_request');
    await expectError(await push({ ...goodRequest, code_challenge_method: 'plain' }), 400, 'invalid_request');
    await expectError(await push(noRedirect), 400, 'invalid_request');
    await expectError(await push({ ...goodRequest, scope: 'nothing-here' }), 400, 'invalid_scope');
    await expectError(
      await push({ ...goodRequest, scope: '', authorization_details: '[{"type":"other"}]' }),
      400,
      'invalid_authorization_details',
    );
  });

  it('a reused or foreign request_uri is refused without a redirect', async () => {
    const pushed = (await (await push(goodRequest)).json()) as { request_uri: string };
    const at = (clientId: string) =>
      fetch(
        `${issuer.url}/oid4vci/authorize?${new URLSearchParams({ client_id: clientId, request_uri: pushed.request_uri })}`,
        {
          redirect: 'manual',
        },
      );
    await expectError(await at('wallet-2'), 400, 'invalid_request');
    expect((await at('wallet-1')).status).toBe(303);
    await expectError(await at('wallet-1'), 400, 'invalid_request');
  });

  it('a code replayed, used by another client, with the wrong verifier or redirect_uri', async () => {
    const before = await oid4vciIssuances();
    const back = await codeFor(goodRequest);
    expect(back.searchParams.get('iss')).toBe(issuer.url);
    expect(back.searchParams.get('state')).toBe('wallet-state');
    const code = back.searchParams.get('code')!;
    const grant = { grant_type: 'authorization_code', code, redirect_uri: WALLET_REDIRECT };
    // Another client: refused, and the code is spent.
    await expectError(
      await token({ ...grant, client_id: 'wallet-2', code_verifier: VERIFIER }),
      400,
      'invalid_grant',
    );
    await expectError(
      await token({ ...grant, client_id: 'wallet-1', code_verifier: VERIFIER }),
      400,
      'invalid_grant',
    );

    const wrongVerifier = (await codeFor(goodRequest)).searchParams.get('code')!;
    await expectError(
      await token({ ...grant, code: wrongVerifier, code_verifier: `${VERIFIER.slice(0, -1)}B` }),
      400,
      'invalid_grant',
    );
    const wrongRedirect = (await codeFor(goodRequest)).searchParams.get('code')!;
    await expectError(
      await token({
        ...grant,
        code: wrongRedirect,
        redirect_uri: 'https://evil.example/cb',
        code_verifier: VERIFIER,
      }),
      400,
      'invalid_grant',
    );
    // Right at last, then replayed.
    const good = (await codeFor(goodRequest)).searchParams.get('code')!;
    const first = await token({ ...grant, code: good, code_verifier: VERIFIER });
    expect(first.status, await first.clone().text()).toBe(200);
    await expectError(await token({ ...grant, code: good, code_verifier: VERIFIER }), 400, 'invalid_grant');
    expect(await oid4vciIssuances()).toBe(before);
  });

  it('the holder cancels at the provider, or signs in as another user than the offer’s', async () => {
    const pushed = (await (await push(goodRequest)).json()) as { request_uri: string };
    const atProvider = await followIssuerRedirect(
      `${issuer.url}/oid4vci/authorize?${new URLSearchParams({ client_id: 'wallet-1', request_uri: pushed.request_uri })}`,
    );
    const cancelled = new URL(
      await followIssuerRedirect(await provider.signIn(atProvider, 'x', { abort: true })),
    );
    expect(Object.fromEntries(cancelled.searchParams)).toMatchObject({
      error: 'access_denied',
      state: 'wallet-state',
      iss: issuer.url,
    });
    expect(cancelled.searchParams.has('code')).toBe(false);

    const res = await issuer.admin('/admin/credential-offers', {
      schemaId: 'membership-v1',
      userId: 'demo-user-2',
      grant: 'authorization_code',
    });
    const offer = (await res.json()) as { offerId: string };
    const other = await codeFor({ ...goodRequest, issuer_state: offer.offerId }, 'demo-user-1');
    expect(other.searchParams.get('error')).toBe('access_denied');
    expect(other.searchParams.has('code')).toBe(false);
  });

  it('plain authorization requests are taken under the basic profile', async () => {
    const res = await fetch(`${issuer.url}/oid4vci/authorize?${new URLSearchParams(goodRequest)}`, {
      redirect: 'manual',
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')!.startsWith(`${provider.issuer}/auth?`)).toBe(true);
  });
});

describe('OID4VCI_PROFILE=haip', () => {
  it('requires pushed requests: a plain authorization request is refused, the metadata says so', async () => {
    const dir = tempDir();
    const haip = await startIssuer({
      dir,
      env: {
        OID4VCI: 'on',
        SCHEMAS_DIR: sdJwtMembershipSchemas(dir),
        OID4VCI_PROFILE: 'haip',
        OID4VCI_LOGIN_ISSUER: provider.issuer,
        OID4VCI_LOGIN_CLIENT_ID: provider.clientId,
        OID4VCI_LOGIN_CLIENT_SECRET: provider.clientSecret,
      },
    });
    try {
      const meta = (await (
        await fetch(`${haip.url}/.well-known/oauth-authorization-server`)
      ).json()) as Record<string, unknown>;
      expect(meta.require_pushed_authorization_requests).toBe(true);
      const res = await fetch(`${haip.url}/oid4vci/authorize?${new URLSearchParams(goodRequest)}`, {
        redirect: 'manual',
      });
      await expectError(res, 400, 'invalid_request');
      // And a push without the wallet attestation the profile requires.
      const pushed = await fetch(`${haip.url}/oid4vci/par`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(goodRequest).toString(),
      });
      await expectError(pushed, 401, 'invalid_client');
    } finally {
      await haip.close();
    }
  });
});

describe('OID4VCI_PROFILE=haip, the whole flow', () => {
  it('the oid4vc-ts wallet with its attestation: attested PAR, sign-in, DPoP with the server’s nonces; the credential verifies', async () => {
    const walletProvider = await attester('wallet-provider');
    const { issuer: haip, login } = await issuerWithLogin({
      OID4VCI_PROFILE: 'haip',
      OID4VCI_WALLET_TRUST: walletProvider.trustFile,
    });
    try {
      const key = holderKey();
      const sub = `wallet-${randomUUID()}`;
      const { credential, accessTokenResponse } = await receiveByAuthorizationCode({
        issuerUrl: haip.url,
        clientId: sub,
        clientAttestation: { jwt: walletAttestation(walletProvider, { sub, cnf: key.publicJwk }), key },
        signIn: async (url) => {
          const atProvider = await followIssuerRedirect(url);
          return followIssuerRedirect(await login.signIn(atProvider, 'demo-user-1'));
        },
      });
      expect(accessTokenResponse.token_type).toBe('DPoP');
      expect((await verifySdJwtVc(haip.url, credential)).claims).toMatchObject({ givenName: 'Alice' });
    } finally {
      await haip.close();
      await login.close();
    }
  });
});

describe('OID4VCI_DPOP_NONCE=required', () => {
  it('a token request answered use_dpop_nonce leaves the code good for the same request with the nonce', async () => {
    const { issuer: withNonces, login } = await issuerWithLogin({ OID4VCI_DPOP_NONCE: 'required' });
    try {
      const pushed = await fetch(`${withNonces.url}/oid4vci/par`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(goodRequest).toString(),
      });
      const { request_uri } = (await pushed.json()) as { request_uri: string };
      const atProvider = await followIssuerRedirect(
        `${withNonces.url}/oid4vci/authorize?${new URLSearchParams({ client_id: 'wallet-1', request_uri })}`,
      );
      const back = new URL(await followIssuerRedirect(await login.signIn(atProvider, 'demo-user-1')));
      const code = back.searchParams.get('code')!;
      const key = holderKey();
      const tokenUrl = `${withNonces.url}/oid4vci/token`;
      // RFC 9449 §4.2: a DPoP proof for this request, with the server's nonce once it gave one.
      const send = (nonce?: string) =>
        fetch(tokenUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            dpop: jws(
              { typ: 'dpop+jwt', alg: 'ES256', jwk: key.publicJwk },
              {
                htm: 'POST',
                htu: tokenUrl,
                iat: Math.floor(Date.now() / 1000),
                jti: randomUUID(),
                ...(nonce ? { nonce } : {}),
              },
              key.privateKey,
            ),
          },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            redirect_uri: WALLET_REDIRECT,
            client_id: 'wallet-1',
            code_verifier: VERIFIER,
          }).toString(),
        });
      const asked = await send();
      await expectError(asked.clone(), 400, 'use_dpop_nonce');
      const nonce = asked.headers.get('dpop-nonce');
      expect(nonce).toBeTruthy();
      const answered = await send(nonce!);
      expect(answered.status, await answered.clone().text()).toBe(200);
      expect(((await answered.json()) as { token_type: string }).token_type).toBe('DPoP');
    } finally {
      await withNonces.close();
      await login.close();
    }
  });
});

describe('the login provider down', () => {
  it('the wallet is sent back with temporarily_unavailable, its state and iss; nothing issued', async () => {
    const before = await oid4vciIssuances();
    const pushed = (await (await push(goodRequest)).json()) as { request_uri: string };
    await provider.close();
    // The issuer read the provider's discovery document before: the holder is still sent there,
    // and the sign-in's end (the code exchange at the provider's token endpoint) is what fails.
    const res = await fetch(
      `${issuer.url}/oid4vci/authorize?${new URLSearchParams({ client_id: 'wallet-1', request_uri: pushed.request_uri })}`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(303);
    const location = res.headers.get('location')!;
    expect(location.startsWith(`${provider.issuer}/auth?`)).toBe(true);
    const state = new URL(location).searchParams.get('state')!;
    const back = new URL(
      await followIssuerRedirect(
        `${issuer.url}/oid4vci/login/callback?${new URLSearchParams({ state, code: 'c' })}`,
      ),
    );
    expect(Object.fromEntries(back.searchParams)).toMatchObject({
      error: 'temporarily_unavailable',
      state: 'wallet-state',
      iss: issuer.url,
    });
    expect(await oid4vciIssuances()).toBe(before);
  });
});
