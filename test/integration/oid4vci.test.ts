import { sign } from 'node:crypto';
import { join } from 'node:path';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer, tempDir } from '../helpers/issuer.js';
import {
  type HolderKey,
  holderKey,
  openid4vciWallet,
  receiveWithOpenid4vci,
  sdJwtMembershipSchemas,
} from '../helpers/oid4vci-wallet.js';

/**
 * The OpenID4VCI door (docs/interface.md "OpenID4VCI: the wallet door") driven over HTTP by the
 * `@openid4vc/openid4vci` wallet client, the credential checked by `@sd-jwt/sd-jwt-vc` against the
 * issuer's published keys and status list. Bad input answers the specification's error and issues
 * nothing.
 */

interface Offer {
  offerId: string;
  offerUri: string;
  credentialOffer: {
    credential_issuer: string;
    credential_configuration_ids: string[];
    grants: Record<string, { 'pre-authorized_code': string; tx_code?: unknown }>;
  };
  txCode?: string;
  expiresAt: string;
}

const PRE_AUTH = 'urn:ietf:params:oauth:grant-type:pre-authorized_code';

let issuer: TestIssuer;

async function offer(body: Record<string, unknown>): Promise<Offer> {
  const res = await issuer.admin('/admin/credential-offers', { schemaId: 'membership-v1', ...body });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as Offer;
}

const codeOf = (o: Offer) => o.credentialOffer.grants[PRE_AUTH]!['pre-authorized_code'];

async function token(form: Record<string, string>, headers: Record<string, string> = {}) {
  return fetch(`${issuer.url}/oid4vci/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

async function freshNonce(): Promise<string> {
  const res = await fetch(`${issuer.url}/oid4vci/nonce`, { method: 'POST' });
  expect(res.status).toBe(200);
  return ((await res.json()) as { c_nonce: string }).c_nonce;
}

/** A proof JWT signed by `key`, with whatever header and payload a test wants (a hostile wallet). */
function proofJwt(key: HolderKey, payload: Record<string, unknown>, header: Record<string, unknown> = {}) {
  const h = { alg: 'ES256', typ: 'openid4vci-proof+jwt', jwk: key.publicJwk, ...header };
  const input = `${Buffer.from(JSON.stringify(h)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const signature = sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

async function credentialRequest(accessToken: string, body: Record<string, unknown>) {
  return fetch(`${issuer.url}/oid4vci/credential`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
    body: JSON.stringify(body),
  });
}

async function accessTokenFor(o: Offer): Promise<string> {
  const res = await token({ grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

async function oid4vciIssuances(): Promise<number> {
  const rows = await queryStore<{ n: number | string }>(
    issuer.ctx.store,
    "SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'",
  );
  return Number(rows[0]!.n);
}

async function expectError(res: Response, status: number, error: string) {
  const body = (await res.json()) as { error: string; error_description: string };
  expect({ status: res.status, error: body.error }, body.error_description).toEqual({ status, error });
  expect(typeof body.error_description).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+/);
}

beforeAll(async () => {
  const dir = tempDir();
  issuer = await startIssuer({ dir, env: { OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(dir) } });
}, 120_000);
afterAll(async () => {
  await issuer?.close();
});

describe('metadata', () => {
  it('serves credential issuer metadata with one dc+sd-jwt configuration per SD-JWT schema', async () => {
    const res = await fetch(`${issuer.url}/.well-known/openid-credential-issuer`);
    expect(res.status).toBe(200);
    const meta = (await res.json()) as Record<string, any>;
    expect(meta.credential_issuer).toBe(issuer.url);
    expect(meta.credential_endpoint).toBe(`${issuer.url}/oid4vci/credential`);
    expect(meta.nonce_endpoint).toBe(`${issuer.url}/oid4vci/nonce`);
    const config = meta.credential_configurations_supported['membership-v1'];
    expect(config).toMatchObject({
      format: 'dc+sd-jwt',
      vct: 'https://issuer.example/vct/membership-v1',
      cryptographic_binding_methods_supported: ['jwk'],
      credential_signing_alg_values_supported: ['ES256'],
      proof_types_supported: { jwt: { proof_signing_alg_values_supported: ['ES256'] } },
    });
    expect(config.credential_metadata.display[0].name).toBe('Membership');
    expect(config.credential_metadata.claims).toContainEqual(
      expect.objectContaining({ path: ['givenName'], mandatory: true }),
    );
  });

  it('serves authorization server metadata with the pre-authorized code grant', async () => {
    const meta = (await (
      await fetch(`${issuer.url}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({
      issuer: issuer.url,
      token_endpoint: `${issuer.url}/oid4vci/token`,
      grant_types_supported: [PRE_AUTH],
    });
  });
});

describe('a wallet takes an offer (@openid4vc/openid4vci client)', () => {
  it('receives a credential bound to its key, verifiable, recorded, and revocable', async () => {
    const o = await offer({ userId: 'demo-user-1' });
    expect(o.offerUri).toBe(
      `openid-credential-offer://?credential_offer_uri=${encodeURIComponent(`${issuer.url}/oid4vci/offers/${o.offerId}`)}`,
    );
    expect(o.txCode).toBeUndefined();
    const { credential, holder } = await receiveWithOpenid4vci(o.offerUri);

    const verified = await verifySdJwtVc(issuer.url, credential);
    expect(verified.claims).toMatchObject({ givenName: 'Alice', tier: 'gold', memberNumber: 1042 });
    const payload = verified.payload as Record<string, any>;
    expect(payload.cnf.jwk).toEqual(holder.publicJwk);
    expect(payload.iss).toBe(issuer.url);

    // Recorded like any other credential: history, no upload, revocable through the status list.
    const holderDid = payload.sub as string;
    expect(holderDid).toMatch(/^did:jwk:/);
    const history = (await (
      await issuer.admin(`/admin/issuance-history?holderDid=${encodeURIComponent(holderDid)}`)
    ).json()) as {
      data: Array<{ revocationNonce: string; uploadState: string; statusList: { idx: number; uri: string } }>;
    };
    expect(history.data).toHaveLength(1);
    const record = history.data[0]!;
    expect(record).toMatchObject({ uploadState: 'none', channel: 'oid4vci' });
    expect(record.statusList).toEqual(payload.status.status_list);
    expect((await issuer.admin('/admin/revoke', { revocationNonce: record.revocationNonce })).status).toBe(
      200,
    );
    const list = await (await fetch(record.statusList.uri)).text();
    expect(getListFromStatusListJWT(list).getStatus(record.statusList.idx)).toBe(1);
    await expect(verifySdJwtVc(issuer.url, credential)).rejects.toThrow();
    // The hosting service got nothing: this channel does not upload.
    expect(issuer.emulator!.state.envelopesOf(holderDid)).toHaveLength(0);
  });

  it('with a transaction code', async () => {
    const o = await offer({ userId: 'demo-user-2', txCode: true });
    expect(o.txCode).toMatch(/^\d{6}$/);
    expect(o.credentialOffer.grants[PRE_AUTH]!.tx_code).toMatchObject({ input_mode: 'numeric', length: 6 });
    const { credential } = await receiveWithOpenid4vci(o.offerUri, { txCode: o.txCode });
    expect((await verifySdJwtVc(issuer.url, credential)).claims).toMatchObject({ givenName: 'Bram' });
  });

  it('by email with the claims given inline', async () => {
    const o = await offer({
      email: 'carla@example.org',
      claims: {
        givenName: 'Carla',
        familyName: 'Rossi',
        memberSince: '2020-01-01',
        tier: 'platinum',
        memberNumber: 9,
      },
    });
    const { credential } = await receiveWithOpenid4vci(o.offerUri);
    expect((await verifySdJwtVc(issuer.url, credential)).claims).toMatchObject({ givenName: 'Carla' });
    const history = (await (
      await issuer.admin(`/admin/issuance-history?email=${encodeURIComponent('carla@example.org')}`)
    ).json()) as { data: unknown[] };
    expect(history.data).toHaveLength(1);
  });
});

describe('offers refused to the admin', () => {
  it('400 naming the field: no userId or email, reserved claims, email without claims', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'userId'],
      [{ email: 'x@example.org' }, 'claims'],
      [{ userId: 'demo-user-1', claims: { iss: 'me' } }, 'claims.iss'],
      [{ userId: 'demo-user-1', expiresInSeconds: 10 }, 'expiresInSeconds'],
    ];
    for (const [body, field] of cases) {
      const res = await issuer.admin('/admin/credential-offers', { schemaId: 'membership-v1', ...body });
      const answer = (await res.json()) as {
        code: string;
        details: { field?: string; issues?: Array<{ path: string }> };
      };
      expect(res.status, JSON.stringify(answer)).toBe(400);
      expect(JSON.stringify(answer.details)).toContain(field);
    }
  });

  it('422 for claims that do not fit the schema, 404 for a user the claims provider does not know', async () => {
    expect(
      (await issuer.admin('/admin/credential-offers', { schemaId: 'membership-v1', userId: 'nobody' }))
        .status,
    ).toBe(404);
    expect(
      (
        await issuer.admin('/admin/credential-offers', {
          schemaId: 'membership-v1',
          email: 'd@example.org',
          claims: { givenName: 'D' },
        })
      ).status,
    ).toBe(422);
  });
});

describe('bad wallet input: the specification error, nothing issued', () => {
  it('a reused pre-authorized code is invalid_grant', async () => {
    const o = await offer({ userId: 'demo-user-1' });
    await accessTokenFor(o);
    await expectError(
      await token({ grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o) }),
      400,
      'invalid_grant',
    );
    await expectError(
      await token({ grant_type: PRE_AUTH, 'pre-authorized_code': 'made-up' }),
      400,
      'invalid_grant',
    );
  });

  it('an expired pre-authorized code is invalid_grant, and its offer is gone', async () => {
    const o = await offer({ userId: 'demo-user-1' });
    // The offer's time has passed (its expiry moved to the past rather than waiting for it).
    await queryStore(issuer.ctx.store, 'UPDATE oid4vci_offers SET expires_at = 1');
    await expectError(
      await token({ grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o) }),
      400,
      'invalid_grant',
    );
    expect((await fetch(`${issuer.url}/oid4vci/offers/${o.offerId}`)).status).toBe(404);
  });

  it('a wrong tx_code is invalid_grant; after 5 the offer is locked, even for the right code', async () => {
    const o = await offer({ userId: 'demo-user-1', txCode: true });
    const wrong = o.txCode === '000000' ? '111111' : '000000';
    await expectError(
      await token({ grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o) }),
      400,
      'invalid_request',
    );
    for (let i = 0; i < 5; i++)
      await expectError(
        await token({ grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o), tx_code: wrong }),
        400,
        'invalid_grant',
      );
    await expectError(
      await token({ grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o), tx_code: o.txCode! }),
      400,
      'invalid_grant',
    );
  });

  it('proofs: wrong aud → invalid_proof, stale nonce → invalid_nonce, private key member → invalid_proof, unknown configuration → unknown_credential_configuration', async () => {
    const before = await oid4vciIssuances();
    const o = await offer({ userId: 'demo-user-1' });
    const accessToken = await accessTokenFor(o);
    const key = holderKey();
    const iat = Math.floor(Date.now() / 1000);
    const request = (jwt: string, configurationId = 'membership-v1') =>
      credentialRequest(accessToken, {
        credential_configuration_id: configurationId,
        proofs: { jwt: [jwt] },
      });

    await expectError(
      await request(proofJwt(key, { aud: 'https://elsewhere.example', iat, nonce: await freshNonce() })),
      400,
      'invalid_proof',
    );
    // The nonce of a refused proof is spent, as is a made-up one.
    const used = await freshNonce();
    await request(proofJwt(key, { aud: 'https://elsewhere.example', iat, nonce: used }));
    await expectError(
      await request(proofJwt(key, { aud: issuer.url, iat, nonce: used })),
      400,
      'invalid_nonce',
    );
    await expectError(
      await request(proofJwt(key, { aud: issuer.url, iat, nonce: 'made-up' })),
      400,
      'invalid_nonce',
    );
    // An expired nonce (its time moved to the past rather than waiting for it).
    const expired = await freshNonce();
    await queryStore(issuer.ctx.store, 'UPDATE oid4vci_nonces SET expires_at = 1');
    await expectError(
      await request(proofJwt(key, { aud: issuer.url, iat, nonce: expired })),
      400,
      'invalid_nonce',
    );

    const d = (key.privateKey.export({ format: 'jwk' }) as { d: string }).d;
    await expectError(
      await request(
        proofJwt(key, { aud: issuer.url, iat, nonce: await freshNonce() }, { jwk: { ...key.publicJwk, d } }),
      ),
      400,
      'invalid_proof',
    );
    await expectError(
      await request(
        proofJwt(key, { aud: issuer.url, iat, nonce: await freshNonce() }),
        'no-such-configuration',
      ),
      400,
      'unknown_credential_configuration',
    );
    await expectError(
      await request(proofJwt(key, { aud: issuer.url, iat, nonce: await freshNonce() }, { typ: 'JWT' })),
      400,
      'invalid_proof',
    );
    expect(await oid4vciIssuances()).toBe(before);

    // The same token still works with a good proof, once.
    const good = await request(proofJwt(key, { aud: issuer.url, iat, nonce: await freshNonce() }));
    expect(good.status).toBe(200);
    const { credentials } = (await good.json()) as { credentials: Array<{ credential: string }> };
    expect(
      (decodeJwt(credentials[0]!.credential.split('~')[0]!) as { cnf: { jwk: unknown } }).cnf.jwk,
    ).toEqual(key.publicJwk);
    await expectError(
      await request(proofJwt(key, { aud: issuer.url, iat, nonce: await freshNonce() })),
      401,
      'invalid_token',
    );
    expect(await oid4vciIssuances()).toBe(before + 1);
  });

  it('no or a made-up access token is 401 invalid_token with a challenge', async () => {
    const res = await fetch(`${issuer.url}/oid4vci/credential`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ credential_configuration_id: 'membership-v1' }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/Bearer|DPoP/);
    await expectError(
      await credentialRequest('made-up', { credential_configuration_id: 'membership-v1' }),
      401,
      'invalid_token',
    );
  });

  it('the wallet client itself reports the refusal (unknown offer)', async () => {
    const wallet = openid4vciWallet([]);
    await expect(
      wallet.resolveCredentialOffer(
        `openid-credential-offer://?credential_offer_uri=${encodeURIComponent(`${issuer.url}/oid4vci/offers/nope`)}`,
      ),
    ).rejects.toThrow();
  });
});

describe('npm run admin -- offer', () => {
  const cli = (args: string[], options: { tty?: boolean } = {}) =>
    runCli(
      args,
      { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY, KEYS_DIR: join(tempDir(), 'keys') },
      tempDir(),
      options,
    );
  // qrcode's terminal renderer draws with block characters.
  const qrLines = (stdout: string) => stdout.split('\n').filter((l) => /[█▀▄]/.test(l)).length;

  it('on a terminal, prints a QR code, the offer link and the transaction code; a wallet takes the link', async () => {
    const run = await cli(['offer', '--schema', 'membership-v1', '--user', 'demo-user-2', '--tx-code'], {
      tty: true,
    });
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split('\n');
    expect(qrLines(run.stdout)).toBeGreaterThan(10);
    const uri = lines.find((l) => l.startsWith('openid-credential-offer://'))!;
    const txCode = /tx code\s+(\d{6})/.exec(run.stdout)![1]!;
    const { credential } = await receiveWithOpenid4vci(uri, { txCode });
    expect((await verifySdJwtVc(issuer.url, credential)).claims).toMatchObject({ givenName: 'Bram' });
  });

  it('into a file or a pipe, no QR code: the link and the transaction code only', async () => {
    const run = await cli(['offer', '--schema', 'membership-v1', '--user', 'demo-user-2', '--tx-code']);
    expect(run.code, run.stderr).toBe(0);
    expect(qrLines(run.stdout)).toBe(0);
    expect(run.stdout.split('\n')[0]).toMatch(/^openid-credential-offer:\/\//);
    expect(run.stdout).toMatch(/tx code\s+\d{6}/);
  });

  it('takes the claims as --subject too (the name issue gives them), naming that flag in a refusal', async () => {
    const claims = {
      givenName: 'Cleo',
      familyName: 'Subject',
      memberSince: '2021-02-03',
      tier: 'basic',
      memberNumber: 31,
    };
    const args = ['--json', 'offer', '--schema', 'membership-v1', '--email', 'cleo@example.org'];
    const ok = await cli([...args, '--subject', JSON.stringify(claims)]);
    expect(ok.code, ok.stderr).toBe(0);
    const { credential } = await receiveWithOpenid4vci((JSON.parse(ok.stdout) as Offer).offerUri);
    expect((await verifySdJwtVc(issuer.url, credential)).claims).toMatchObject({ givenName: 'Cleo' });
    const bad = await cli(['offer', ...args.slice(2), '--subject', '{"iss":"x"}']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--subject');
    const both = await cli([...args.slice(1), '--subject', '{}', '--claims', '{}']);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/--claims or --subject/);
  });

  it('a refusal names the flag; --json answers the server body', async () => {
    const bad = await cli([
      'offer',
      '--schema',
      'membership-v1',
      '--user',
      'demo-user-1',
      '--claims',
      '{"iss":"x"}',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--claims');
    const ok = await cli(['--json', 'offer', '--schema', 'membership-v1', '--user', 'demo-user-1']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({
      offerUri: expect.stringMatching(/^openid-credential-offer:/),
    });
  });
});

describe('OID4VCI_REQUIRE_DPOP=1', () => {
  let strict: TestIssuer;
  beforeAll(async () => {
    const dir = tempDir();
    strict = await startIssuer({
      dir,
      env: { OID4VCI: 'on', OID4VCI_REQUIRE_DPOP: '1', SCHEMAS_DIR: sdJwtMembershipSchemas(dir) },
    });
  }, 120_000);
  afterAll(async () => {
    await strict?.close();
  });

  const strictOffer = async () => {
    const res = await strict.admin('/admin/credential-offers', {
      schemaId: 'membership-v1',
      userId: 'demo-user-1',
    });
    expect(res.status).toBe(201);
    return (await res.json()) as Offer;
  };

  it('a token request without a DPoP proof is invalid_dpop_proof; a wallet with DPoP gets its credential', async () => {
    const o = await strictOffer();
    const res = await fetch(`${strict.url}/oid4vci/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o) }).toString(),
    });
    await expectError(res, 400, 'invalid_dpop_proof');
    // The refused request did not use the code up.
    const { credential } = await receiveWithOpenid4vci(o.offerUri, { dpop: holderKey() });
    expect((await verifySdJwtVc(strict.url, credential)).claims).toMatchObject({ givenName: 'Alice' });
  });

  it('a DPoP-bound token is refused as a Bearer token, and with another key’s proof', async () => {
    const o = await strictOffer();
    const dpopKey = holderKey();
    const wallet = openid4vciWallet([dpopKey]);
    const credentialOffer = await wallet.resolveCredentialOffer(o.offerUri);
    const issuerMetadata = await wallet.resolveIssuerMetadata(credentialOffer.credential_issuer);
    const { accessTokenResponse } = await wallet.retrievePreAuthorizedCodeAccessTokenFromOffer({
      credentialOffer,
      issuerMetadata,
      dpop: { signer: dpopKey.signer },
    });
    expect(accessTokenResponse.token_type).toBe('DPoP');
    const body = JSON.stringify({ credential_configuration_id: 'membership-v1' });
    const bearer = await fetch(`${strict.url}/oid4vci/credential`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${accessTokenResponse.access_token}`,
      },
      body,
    });
    await expectError(bearer, 401, 'invalid_token');
    const noProof = await fetch(`${strict.url}/oid4vci/credential`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `DPoP ${accessTokenResponse.access_token}`,
      },
      body,
    });
    await expectError(noProof, 401, 'invalid_dpop_proof');
    // Another key's proof for the same request: the token is bound to the first key.
    const other = holderKey();
    const otherWallet = openid4vciWallet([other]);
    await expect(
      otherWallet.retrieveCredentials({
        issuerMetadata,
        accessToken: accessTokenResponse.access_token,
        credentialConfigurationId: 'membership-v1',
        proofs: { jwt: ['x.y.z'] },
        dpop: { signer: other.signer },
      }),
    ).rejects.toThrow(/invalid_dpop_proof|401/);
  });
});

// docs/configuration.md `OID4VCI`: with the door off (the production default), its paths answer
// 404 naming the setting that opens it, and `admin offer` prints that answer.
describe('OID4VCI=off', () => {
  let closed: TestIssuer;
  beforeAll(async () => {
    closed = await startIssuer({ env: { OID4VCI: 'off' } });
  }, 120_000);
  afterAll(async () => {
    await closed?.close();
  });

  it('POST /admin/credential-offers is 404 NOT_FOUND saying OID4VCI=on enables it; so does admin offer', async () => {
    const res = await closed.admin('/admin/credential-offers', {
      schemaId: 'membership-v1',
      userId: 'demo-user-1',
    });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe('NOT_FOUND');
    expect(body.message).toMatch(/OID4VCI=on/);
    expect(
      ((await (await fetch(`${closed.url}/oid4vci/token`)).json()) as { message: string }).message,
    ).toMatch(/OID4VCI=on/);
    // Any other unknown path keeps the plain answer.
    expect(((await (await fetch(`${closed.url}/nowhere`)).json()) as { message: string }).message).toBe(
      'no route GET /nowhere',
    );
    const run = await runCli(
      ['offer', '--schema', 'membership-v1', '--user', 'demo-user-1'],
      { ISSUER_URL: closed.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY },
      tempDir(),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/404 NOT_FOUND: .*OID4VCI=on enables it/);
  });
});
