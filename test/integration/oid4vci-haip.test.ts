import { randomUUID, X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compactVerify, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Attester,
  attestationPop,
  attester,
  jws,
  keyAttestation,
  walletAttestation,
} from '../helpers/attesters.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { type Running, start, stop, writeSchemas } from '../helpers/issuer-modes.js';
import {
  type HolderKey,
  holderKey,
  openid4vciWallet,
  receiveWithOpenid4vci,
  x5cVerifier,
} from '../helpers/oid4vci-wallet.js';

/**
 * OID4VCI_PROFILE=haip (docs/haip.md) over HTTP on loopback: the `@openid4vc/openid4vci` wallet
 * client authenticates with a wallet attestation signed by a test wallet provider's CA (generated
 * here) and uses DPoP with the server's nonces; hostile requests get the specification's error
 * and issue nothing. Beside it, a `basic` server with OID4VCI_WALLET_TRUST checks an attestation
 * that is sent and still serves wallets that send none.
 */

const PRE_AUTH = 'urn:ietf:params:oauth:grant-type:pre-authorized_code';

interface Offer {
  offerUri: string;
  credentialOffer: { grants: Record<string, { 'pre-authorized_code': string }> };
}

let provider: Attester;
let stranger: Attester;
let keyAttester: Attester;
let haip: Running;

const ALICE = {
  givenName: 'Alice',
  familyName: 'Martin',
  memberSince: '2021-04-12',
  tier: 'gold',
  memberNumber: 1042,
};

/** An offer for demo-user-1: the claims provider's claims, or for another schema Alice's inline. */
async function offer(on: TestIssuer, schemaId = 'membership-v1'): Promise<Offer> {
  const res = await on.admin(
    '/admin/credential-offers',
    schemaId === 'membership-v1'
      ? { schemaId, userId: 'demo-user-1' }
      : { schemaId, userId: 'demo-user-1', claims: ALICE },
  );
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as Offer;
}

const codeOf = (o: Offer) => o.credentialOffer.grants[PRE_AUTH]!['pre-authorized_code'];

async function expectError(res: Response, status: number, error: string) {
  const body = (await res.json()) as { error: string; error_description: string };
  expect({ status: res.status, error: body.error }, body.error_description).toEqual({ status, error });
  return body.error_description;
}

async function issuances(on: TestIssuer): Promise<number> {
  const rows = await queryStore<{ n: number | string }>(
    on.ctx.store,
    "SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'",
  );
  return Number(rows[0]!.n);
}

function dpopProof(key: HolderKey, htu: string, nonce?: string): string {
  return jws(
    { typ: 'dpop+jwt', alg: 'ES256', jwk: key.publicJwk },
    {
      htm: 'POST',
      htu,
      iat: Math.floor(Date.now() / 1000),
      jti: randomUUID(),
      ...(nonce ? { nonce } : {}),
    },
    key.privateKey,
  );
}

/** A wallet: its attested key, and the attestation its provider gave it. */
function wallet(by: Attester, options: { sub?: string; expiresIn?: number } = {}) {
  const key = holderKey();
  const sub = options.sub ?? `wallet-${randomUUID()}`;
  const jwt = walletAttestation(by, { sub, cnf: key.publicJwk, expiresIn: options.expiresIn });
  return { key, sub, jwt };
}

/** A token request of a hostile wallet, with a DPoP proof carrying the server's nonce. */
async function tokenRequest(
  on: Running,
  code: string,
  headers: Record<string, string>,
  form: Record<string, string> = {},
): Promise<Response> {
  const url = `${on.issuer.url}/oid4vci/token`;
  const htu = `${on.origin}/oid4vci/token`;
  const dpop = holderKey();
  const body = new URLSearchParams({ grant_type: PRE_AUTH, 'pre-authorized_code': code, ...form }).toString();
  const send = (nonce?: string) =>
    fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        dpop: dpopProof(dpop, htu, nonce),
        ...headers,
      },
      body,
    });
  const asked = await send();
  await expectError(asked.clone(), 400, 'use_dpop_nonce');
  return send(asked.headers.get('dpop-nonce')!);
}

beforeAll(async () => {
  [provider, stranger, keyAttester] = await Promise.all([
    attester('wallet-provider'),
    attester('stranger'),
    attester('key-attester'),
  ]);
  haip = await start('x5c', {
    OID4VCI: 'on',
    OID4VCI_PROFILE: 'haip',
    OID4VCI_WALLET_TRUST: provider.trustFile,
    OID4VCI_KEY_ATTESTATION_TRUST: keyAttester.trustFile,
  });
  // A second schema that requires key attestation with hardware-grade storage.
  const schemas = join(haip.issuer.dir, 'schemas');
  const attested = JSON.parse(readFileSync(join(schemas, 'membership-v1.json'), 'utf8'));
  attested.schemaId = 'membership-attested';
  attested.sdJwt.vct = `${haip.origin}/vct/membership-attested`;
  attested.keyAttestation = {
    keyStorage: ['iso_18045_high'],
    userAuthentication: ['iso_18045_high', 'iso_18045_moderate'],
  };
  writeFileSync(join(schemas, 'membership-attested.json'), JSON.stringify(attested));
  expect((await haip.issuer.admin('/admin/schemas/reload', {})).status).toBe(200);
}, 120_000);
afterAll(async () => {
  if (haip) await stop(haip);
});

describe('OID4VCI_PROFILE=haip', () => {
  it('authorization server metadata: wallet attestation is the only client authentication, DPoP ES256', async () => {
    const meta = (await (
      await fetch(`${haip.issuer.url}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({
      token_endpoint_auth_methods_supported: ['attest_jwt_client_auth'],
      'pre-authorized_grant_anonymous_access_supported': false,
      dpop_signing_alg_values_supported: ['ES256'],
    });
  });

  it('a wallet with an attestation and DPoP (the server’s nonces) receives a credential that verifies', async () => {
    const o = await offer(haip.issuer);
    const w = wallet(provider);
    const { credential } = await receiveWithOpenid4vci(o.offerUri, {
      dpop: holderKey(),
      clientAttestation: { jwt: w.jwt, key: w.key },
    });
    expect((await verifySdJwtVc(haip.origin, credential)).claims).toMatchObject({ givenName: 'Alice' });
  });

  it('refused with invalid_client: no attestation, untrusted provider, expired, PoP for another audience or key, client_id not its sub; nothing issued', async () => {
    const before = await issuances(haip.issuer);
    const o = await offer(haip.issuer);
    const code = codeOf(o);
    const aud = haip.origin;
    const w = wallet(provider);
    const pop = () => attestationPop(w.key.privateKey, { iss: w.sub, aud });
    const attested = (jwt: string, popJwt: string) => ({
      'oauth-client-attestation': jwt,
      'oauth-client-attestation-pop': popJwt,
    });
    /** A wallet's attestation with a proof of possession by its own key for this issuer. */
    const attestedWith = (x: typeof w) =>
      attested(x.jwt, attestationPop(x.key.privateKey, { iss: x.sub, aud }));

    expect(await expectError(await tokenRequest(haip, code, {}), 401, 'invalid_client')).toMatch(
      /wallet attestation is required/,
    );
    const foreign = wallet(stranger);
    expect(
      await expectError(await tokenRequest(haip, code, attestedWith(foreign)), 401, 'invalid_client'),
    ).toMatch(/not from a trusted wallet provider/);
    const expired = wallet(provider, { expiresIn: -60 });
    expect(
      await expectError(await tokenRequest(haip, code, attestedWith(expired)), 401, 'invalid_client'),
    ).toMatch(/exp/);
    await expectError(
      await tokenRequest(
        haip,
        code,
        attested(
          w.jwt,
          attestationPop(w.key.privateKey, { iss: w.sub, aud: 'https://other-issuer.example' }),
        ),
      ),
      401,
      'invalid_client',
    );
    // A PoP signed by another key than the attested one.
    await expectError(
      await tokenRequest(
        haip,
        code,
        attested(w.jwt, attestationPop(holderKey().privateKey, { iss: w.sub, aud })),
      ),
      401,
      'invalid_client',
    );
    expect(
      await expectError(
        await tokenRequest(haip, code, attested(w.jwt, pop()), { client_id: 'someone-else' }),
        401,
        'invalid_client',
      ),
    ).toMatch(/client_id/);
    // A self-signed attestation (its key in a jwk header, no chain) is no wallet provider's.
    const selfSigned = jws(
      { alg: 'ES256', typ: 'oauth-client-attestation+jwt', jwk: w.key.publicJwk },
      JSON.parse(Buffer.from(w.jwt.split('.')[1]!, 'base64url').toString()),
      w.key.privateKey,
    );
    expect(
      await expectError(await tokenRequest(haip, code, attested(selfSigned, pop())), 401, 'invalid_client'),
    ).toMatch(/x5c/);
    expect(await issuances(haip.issuer)).toBe(before);

    // The offer was not used up: the same wallet, with a fresh PoP, gets its token; the PoP
    // replayed on another offer is refused.
    const good = pop();
    expect((await tokenRequest(haip, code, attested(w.jwt, good), { client_id: w.sub })).status).toBe(200);
    const replay = await tokenRequest(haip, codeOf(await offer(haip.issuer)), attested(w.jwt, good));
    expect(await expectError(replay, 401, 'invalid_client')).toMatch(/already used/);
  });
});

describe('signed issuer metadata (SD_JWT_ISSUER=x5c)', () => {
  it('on Accept: application/jwt, the metadata signed by the credential key with its x5c chain; a wallet verifies it', async () => {
    const url = `${haip.issuer.url}/.well-known/openid-credential-issuer`;
    const res = await fetch(url, { headers: { accept: 'application/jwt' } });
    expect(res.headers.get('content-type')).toMatch(/^application\/jwt/);
    expect(res.headers.get('vary')).toMatch(/Accept/i);
    const jwt = await res.text();
    const header = decodeProtectedHeader(jwt);
    expect(header).toMatchObject({ typ: 'openidvci-issuer-metadata+jwt', alg: 'ES256' });
    // Not self-signed: the leaf is the development CA's, as the credentials' is.
    const chain = header.x5c!.map((c) => new X509Certificate(Buffer.from(c, 'base64')));
    expect(chain[0]!.checkIssued(chain[0]!)).toBe(false);
    expect(chain.at(-1)!.verify(new X509Certificate(haip.caPem).publicKey)).toBe(true);
    await compactVerify(jwt, chain[0]!.publicKey);
    const json = (await (await fetch(url)).json()) as Record<string, unknown>;
    const payload = decodeJwt(jwt);
    expect(payload).toMatchObject({ ...json, sub: haip.origin, iss: haip.origin });
    expect(payload.exp! - payload.iat!).toBe(86_400);
    // The oid4vc-ts wallet verifies the signed form with its own check of the chain.
    // (0.4.6 takes a JWT answer but sends no Accept of its own: its fetch adds what §12.2.3 says.)
    const asking: typeof fetch = (input, init) =>
      fetch(
        input,
        String(input).includes('/.well-known/openid-credential-issuer')
          ? { ...init, headers: { accept: 'application/jwt, application/json' } }
          : init,
      );
    const wallet = openid4vciWallet([], asking, undefined, x5cVerifier(haip.caPem));
    const resolved = await wallet.resolveIssuerMetadata(haip.origin);
    expect(resolved.signedCredentialIssuer?.jwt.header.typ).toBe('openidvci-issuer-metadata+jwt');
    expect(resolved.credentialIssuer.credential_issuer).toBe(haip.origin);
  });
});

describe('key attestation (OID4VCI_KEY_ATTESTATION_TRUST, a schema with keyAttestation)', () => {
  const HIGH = { keyStorage: ['iso_18045_high'], userAuthentication: ['iso_18045_moderate'] };

  it('metadata: key_attestations_required on the jwt proof type, and the attestation proof type', async () => {
    const meta = (await (await fetch(`${haip.issuer.url}/.well-known/openid-credential-issuer`)).json()) as {
      credential_configurations_supported: Record<
        string,
        { scope: string; proof_types_supported: Record<string, unknown> }
      >;
    };
    const required = {
      key_storage: ['iso_18045_high'],
      user_authentication: ['iso_18045_high', 'iso_18045_moderate'],
    };
    expect(meta.credential_configurations_supported['membership-attested']!.proof_types_supported).toEqual({
      jwt: { proof_signing_alg_values_supported: ['ES256'], key_attestations_required: required },
      attestation: { proof_signing_alg_values_supported: ['ES256'], key_attestations_required: required },
    });
    // HAIP: every configuration has a scope (the schema id).
    expect(meta.credential_configurations_supported['membership-attested']!.scope).toBe(
      'membership-attested',
    );
    // Under haip a schema without the block takes attestation proofs too, and requires none.
    expect(meta.credential_configurations_supported['membership-v1']!.proof_types_supported).toEqual({
      jwt: { proof_signing_alg_values_supported: ['ES256'] },
      attestation: { proof_signing_alg_values_supported: ['ES256'] },
    });
  });

  it('a jwt proof with a key attestation of its key gets the credential (oid4vc-ts client), bound to that key', async () => {
    const w = wallet(provider);
    const holder = holderKey();
    const { credential } = await receiveWithOpenid4vci(
      (await offer(haip.issuer, 'membership-attested')).offerUri,
      {
        dpop: holderKey(),
        holder,
        clientAttestation: { jwt: w.jwt, key: w.key },
        keyAttestation: keyAttestation(keyAttester, { keys: [holder.publicJwk], ...HIGH }),
      },
    );
    const payload = JSON.parse(Buffer.from(credential.split('.')[1]!, 'base64url').toString());
    expect(payload.cnf.jwk).toMatchObject({ x: holder.publicJwk.x, y: holder.publicJwk.y });
  });

  /** Up to the credential request: a token (DPoP-bound, attested wallet) and a c_nonce. */
  async function upToCredential(schemaId: string) {
    const o = await offer(haip.issuer, schemaId);
    const w = wallet(provider);
    const dpopKey = holderKey();
    const client = openid4vciWallet([dpopKey, w.key], undefined, w.jwt);
    const credentialOffer = await client.resolveCredentialOffer(o.offerUri);
    const issuerMetadata = await client.resolveIssuerMetadata(credentialOffer.credential_issuer);
    const { accessTokenResponse, dpop } = await client.retrievePreAuthorizedCodeAccessTokenFromOffer({
      credentialOffer,
      issuerMetadata,
      dpop: { signer: dpopKey.signer },
    });
    const nonce = async () => (await client.requestNonce({ issuerMetadata })).c_nonce;
    const request = (proofs: Record<string, string[]>) =>
      client.retrieveCredentials({
        issuerMetadata,
        accessToken: accessTokenResponse.access_token,
        credentialConfigurationId: schemaId,
        proofs,
        dpop,
      });
    // Made by hand: the client refuses to make a proof the metadata says is not enough.
    const proof = async (holder: HolderKey, keyAttestationJwt?: string) =>
      jws(
        {
          alg: 'ES256',
          typ: 'openid4vci-proof+jwt',
          jwk: holder.publicJwk,
          ...(keyAttestationJwt ? { key_attestation: keyAttestationJwt } : {}),
        },
        { aud: haip.origin, iat: Math.floor(Date.now() / 1000), nonce: await nonce() },
        holder.privateKey,
      );
    return { request, proof, nonce, client };
  }

  const refusal = async (p: Promise<unknown>): Promise<{ error: string; error_description: string }> => {
    const err = (await p.then(
      () => {
        throw new Error('the request was accepted');
      },
      (e: unknown) => e,
    )) as { response?: { credentialErrorResponseResult?: { data?: unknown } } };
    return err.response?.credentialErrorResponseResult?.data as { error: string; error_description: string };
  };

  it('refused with invalid_proof: none, another key, an untrusted attester, storage below the accepted level; nothing issued', async () => {
    const before = await issuances(haip.issuer);
    const { request, proof } = await upToCredential('membership-attested');
    const holder = holderKey();
    const cases: [string, () => Promise<string>, RegExp][] = [
      ['no key attestation', () => proof(holder), /requires a key attestation/],
      [
        'attests another key',
        () => proof(holder, keyAttestation(keyAttester, { keys: [holderKey().publicJwk], ...HIGH })),
        /attested_keys/,
      ],
      [
        'untrusted attester',
        () => proof(holder, keyAttestation(stranger, { keys: [holder.publicJwk], ...HIGH })),
        /not from a trusted key attester/,
      ],
      [
        'software storage',
        () =>
          proof(
            holder,
            keyAttestation(keyAttester, {
              keys: [holder.publicJwk],
              keyStorage: ['iso_18045_basic'],
              userAuthentication: ['iso_18045_moderate'],
            }),
          ),
        /key_storage \(iso_18045_basic\) is none of the accepted/,
      ],
    ];
    for (const [name, make, message] of cases) {
      const body = await refusal(request({ jwt: [await make()] }));
      expect({ name, error: body?.error }).toEqual({ name, error: 'invalid_proof' });
      expect(body.error_description).toMatch(message);
    }
    expect(await issuances(haip.issuer)).toBe(before);
    // The token is still good: a right proof gets the credential.
    const ok = await request({
      jwt: [await proof(holder, keyAttestation(keyAttester, { keys: [holder.publicJwk], ...HIGH }))],
    });
    expect(ok.credentialResponse.credentials).toHaveLength(1);
  });

  it('the attestation proof type: bound to the first attested key; its nonce must be a fresh c_nonce', async () => {
    const { request, nonce } = await upToCredential('membership-attested');
    const holder = holderKey();
    const stale = keyAttestation(keyAttester, { keys: [holder.publicJwk], ...HIGH, nonce: 'made-up' });
    expect((await refusal(request({ attestation: [stale] }))).error).toBe('invalid_nonce');
    const good = keyAttestation(keyAttester, { keys: [holder.publicJwk], ...HIGH, nonce: await nonce() });
    const { credentialResponse } = await request({ attestation: [good] });
    const first = credentialResponse.credentials![0] as { credential: string };
    const payload = JSON.parse(Buffer.from(first.credential.split('.')[1]!, 'base64url').toString());
    expect(payload.cnf.jwk).toMatchObject({ x: holder.publicJwk.x });
  });
});

describe('OID4VCI_PROFILE=basic with OID4VCI_WALLET_TRUST', () => {
  let basic: TestIssuer;
  beforeAll(async () => {
    const dir = tempDir();
    basic = await startIssuer({
      dir,
      env: { OID4VCI: 'on', OID4VCI_WALLET_TRUST: provider.trustFile },
      prepare: async (_d, origin) => {
        writeSchemas(dir, origin);
      },
    });
  }, 120_000);
  afterAll(async () => {
    await basic?.close();
  });

  it('an attestation sent is checked (untrusted: invalid_client); a wallet sending none is served as before', async () => {
    const meta = (await (
      await fetch(`${basic.url}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(meta.token_endpoint_auth_methods_supported).toEqual(['none', 'attest_jwt_client_auth']);
    // Not in x5c mode: JSON whatever the wallet asks for.
    const asked = await fetch(`${basic.url}/.well-known/openid-credential-issuer`, {
      headers: { accept: 'application/jwt' },
    });
    expect(asked.headers.get('content-type')).toMatch(/^application\/json/);
    const o = await offer(basic);
    const foreign = wallet(stranger);
    const res = await fetch(`${basic.url}/oid4vci/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'oauth-client-attestation': foreign.jwt,
        'oauth-client-attestation-pop': attestationPop(foreign.key.privateKey, {
          iss: foreign.sub,
          aud: basic.url,
        }),
      },
      body: new URLSearchParams({ grant_type: PRE_AUTH, 'pre-authorized_code': codeOf(o) }).toString(),
    });
    await expectError(res, 401, 'invalid_client');
    const { credential } = await receiveWithOpenid4vci(o.offerUri);
    expect((await verifySdJwtVc(basic.url, credential)).claims).toMatchObject({ givenName: 'Alice' });
    const w = wallet(provider);
    const attested = await receiveWithOpenid4vci((await offer(basic)).offerUri, {
      clientAttestation: { jwt: w.jwt, key: w.key },
    });
    expect(attested.credential).toContain('~');
  });
});
