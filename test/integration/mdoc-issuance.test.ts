import { createPublicKey, generateKeyPairSync, verify, X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import {
  MDoc as AnimoMDoc,
  cborDecode,
  cborEncode,
  DataItem,
  DateOnly,
  parseIssuerSigned,
} from '@animo-id/mdoc';
import { DeviceResponse, parse, Verifier } from '@auth0/mdl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { runCli } from '../helpers/cli.js';
import { credoHolder, newKeyBinding } from '../helpers/credo.js';
import { adaMembership } from '../helpers/direct-issue.js';
import { expectError } from '../helpers/errors.js';
import {
  queryStore,
  startIssuer,
  TEST_ADMIN_API_KEY,
  TEST_STORE,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';
import { receiveWithOpenid4vci } from '../helpers/oid4vci-wallet.js';
import { processToken, softHsmAvailable } from '../helpers/softhsm.js';

/**
 * ISO mdoc through the OpenID4VCI door: a standards wallet (`@openid4vc/openid4vci`) receives it,
 * `@auth0/mdl` (an ISO 18013-5 implementation of its own) verifies the issuer signature, the chain
 * to the IACA certificate the issuer publishes, the digests and a device signature made with the
 * proof's key; the CWT Status List Token reads revoked after `/admin/revoke`; `admin verify` agrees.
 */

const DOC_TYPE = 'org.example.membership.1';

function writeSchemas(dir: string): string {
  const schemas = join(dir, 'schemas');
  const schema = JSON.parse(readFileSync('schemas/membership-v1.json', 'utf8'));
  schema.proofTypes = ['SD_JWT_VC', 'MSO_MDOC'];
  delete schema.iden3;
  schema.mdoc = { docType: DOC_TYPE, elements: { memberNumber: 'member_number' } };
  mkdirSync(schemas, { recursive: true });
  writeFileSync(join(schemas, 'membership-v1.json'), JSON.stringify(schema));
  return schemas;
}

let issuer: TestIssuer;
let dir: string;

beforeAll(async () => {
  dir = tempDir();
  issuer = await startIssuer({ dir, env: { OID4VCI: 'on', SCHEMAS_DIR: writeSchemas(dir) } });
}, 120_000);
afterAll(async () => {
  await issuer?.close();
});

async function offerMdoc(): Promise<string> {
  const res = await issuer.admin('/admin/credential-offers', {
    schemaId: 'membership-v1',
    proofType: 'MSO_MDOC',
    userId: 'demo-user-1',
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { offerUri: string }).offerUri;
}

async function iacaPem(): Promise<string> {
  const res = await fetch(`${issuer.url}/.well-known/mdoc-iaca.pem`);
  expect(res.status).toBe(200);
  return res.text();
}

describe('mdoc over OpenID4VCI', () => {
  let credential: string;
  let holderJwk: Record<string, unknown>;

  it('lists an mso_mdoc configuration beside the SD-JWT VC one', async () => {
    const res = await fetch(`${issuer.url}/.well-known/openid-credential-issuer`);
    const meta = (await res.json()) as { credential_configurations_supported: Record<string, any> };
    expect(Object.keys(meta.credential_configurations_supported).sort()).toEqual([
      'membership-v1',
      'membership-v1.mdoc',
    ]);
    const mdoc = meta.credential_configurations_supported['membership-v1.mdoc'];
    expect(mdoc).toMatchObject({
      format: 'mso_mdoc',
      doctype: DOC_TYPE,
      credential_signing_alg_values_supported: [-7],
      cryptographic_binding_methods_supported: ['cose_key'],
    });
    expect(mdoc.credential_metadata.claims).toContainEqual(
      expect.objectContaining({ path: [DOC_TYPE, 'member_number'] }),
    );
  });

  it('a wallet receives an mdoc that @auth0/mdl verifies: signature, chain, digests, device key', async () => {
    const received = await receiveWithOpenid4vci(await offerMdoc());
    credential = received.credential;
    holderJwk = received.holder.privateKey.export({ format: 'jwk' }) as Record<string, unknown>;
    const document = parseIssuerSigned(Buffer.from(credential, 'base64url'), DOC_TYPE);
    const values = Object.fromEntries(document.getIssuerNameSpace(DOC_TYPE)!);
    expect(values).toMatchObject({ member_number: expect.any(Number), tier: expect.any(String) });
    // A "format": "date" claim is a full-date (CBOR tag 1004), decoded as the library's DateOnly.
    expect(values.memberSince).toBeInstanceOf(DateOnly);
    expect(String(values.memberSince)).toMatch(/^\d{4}-\d{2}-\d{2}$/);

    const { failed, passed } = await presentAndVerify(issuer.url, credential, holderJwk);
    expect(failed).toEqual([]);
    expect(passed).toContainEqual(expect.stringMatching(/ISSUER_AUTH: Issuer certificate must be valid/));
    expect(passed).toContainEqual(expect.stringMatching(/ISSUER_AUTH: Issuer signature must be valid/));
    expect(passed).toContainEqual(expect.stringMatching(/DEVICE_AUTH: Device signature must be valid/));
    expect(passed).toContainEqual(expect.stringMatching(/DATA_INTEGRITY/));
  });

  it('the MSO names a status list entry, served as a CWT that reads revoked after /admin/revoke', async () => {
    const document = parseIssuerSigned(Buffer.from(credential, 'base64url'));
    const mso = document.issuerSigned.issuerAuth.decodedPayload as unknown as Record<string, unknown>;
    const ref = (mso.status as Map<string, Map<string, unknown>>).get('status_list')!;
    const idx = ref.get('idx') as number;
    const uri = ref.get('uri') as string;
    const signer = new X509Certificate(document.issuerSigned.issuerAuth.certificate);

    expect(await cwtStatus(uri, idx, signer)).toBe(0);
    const [row] = await queryStore<{ revocation_nonce: number | string }>(
      issuer.ctx.store,
      "SELECT revocation_nonce FROM issuances WHERE proof_type = 'MSO_MDOC'",
    );
    const revoked = await issuer.admin('/admin/revoke', { revocationNonce: String(row!.revocation_nonce) });
    expect(revoked.status).toBe(200);
    expect(await cwtStatus(uri, idx, signer)).toBe(1);
    // The JWT form stays the default answer.
    const jwt = await fetch(uri);
    expect(jwt.headers.get('content-type')).toBe('application/statuslist+jwt');
    expect(jwt.headers.get('vary')).toMatch(/Accept/i);
  });

  it('admin verify checks signature, chain, digests, validity and status', async () => {
    const file = join(dir, 'mdoc.txt');
    writeFileSync(file, credential);
    const pem = join(dir, 'iaca.pem');
    writeFileSync(pem, await iacaPem());
    const run = await runCli(['--json', 'verify', file, '--trust', pem], {}, dir);
    const body = JSON.parse(run.stdout) as {
      ok: boolean;
      format: string;
      checks: Array<Record<string, unknown>>;
    };
    expect(body.format).toBe('mso-mdoc');
    expect(body.checks.map((c) => [c.check, c.ok, c.code ?? null])).toEqual([
      ['format', true, null],
      ['signature', true, null],
      ['digests', true, null],
      ['validity', true, null],
      ['status', false, 'REVOKED'],
    ]);
  });

  it("Credo's holder (@credo-ts/openid4vc) receives the mdoc and verifies it against the IACA", async () => {
    const agent = credoHolder({ trustedCertificates: [await iacaPem()], allowInsecureHttpUrls: true });
    try {
      const holder = agent.modules.openid4vc.holder;
      const resolved = await holder.resolveCredentialOffer(await offerMdoc());
      expect(Object.keys(resolved.offeredCredentialConfigurations)).toEqual(['membership-v1.mdoc']);
      const token = await holder.requestToken({ resolvedCredentialOffer: resolved });
      const binding = newKeyBinding();
      const { credentials } = await holder.requestCredentials({
        resolvedCredentialOffer: resolved,
        ...token,
        credentialBindingResolver: binding.resolver,
      });
      // Credo keeps an mdoc only after verifying its issuer signature, chain and digests.
      expect(credentials).toHaveLength(1);
      const record = credentials[0]!.record as unknown as {
        credentialInstances: Array<{ issuerSignedBase64Url: string }>;
      };
      const received = parseIssuerSigned(
        Buffer.from(record.credentialInstances[0]!.issuerSignedBase64Url, 'base64url'),
      );
      expect(received.docType).toBe(DOC_TYPE);
      // Its device key is the key Credo bound.
      const deviceKey = received.issuerSigned.issuerAuth.decodedPayload.deviceKeyInfo?.deviceKey as
        | Map<number, unknown>
        | undefined;
      const { x } = binding.keys.at(-1)!.toJson() as { x: string };
      expect(Buffer.from(deviceKey!.get(-2) as Uint8Array).toString('base64url')).toBe(x);
    } finally {
      await agent.shutdown().catch(() => undefined);
    }
  });

  // The CLI reads this issuer's KEYS_DIR and SQLite file (TEST_STORE=postgres keeps keys in a database of its own).
  it.skipIf(TEST_STORE !== 'sqlite')(
    'admin doctor shows the IACA and document signer certificates with their expiry',
    async () => {
      const run = await runCli(
        ['--json', 'doctor'],
        {
          ISSUER_ORIGIN: issuer.url,
          KEYS_DIR: join(dir, 'keys'),
          SCHEMAS_DIR: join(dir, 'schemas'),
          DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
        },
        dir,
      );
      const { items } = JSON.parse(run.stdout) as {
        items: Array<{ item: string; verdict: string; detail: string }>;
      };
      const mdoc = items.filter((l) => l.item === 'mdoc certificates');
      expect(mdoc.map((l) => l.verdict)).toEqual(['PASS', 'PASS']);
      expect(mdoc[0]!.detail).toMatch(
        /^IACA root C=XX, CN=issuer-kit development IACA .*: valid until \d{4}-.* \(\d+ days\)$/,
      );
      expect(mdoc[1]!.detail).toMatch(/document signer: issued by the development IACA/);
    },
  );

  it('the console Keys page shows the IACA root and document signer certificates with their expiry', async () => {
    const signIn = await fetch(`${issuer.url}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: issuer.url },
      body: new URLSearchParams({ key: TEST_ADMIN_API_KEY }),
    });
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const page = await (await fetch(`${issuer.url}/console/keys`, { headers: { cookie } })).text();
    expect(page).toContain('<h2 id="h-format-certificates">Format certificates</h2>');
    const rows = [
      ...page.matchAll(
        /<tr><td>MSO_MDOC<\/td><td>([^<]+)<\/td><td>([^<]+)<\/td><td>([^<]+)<\/td><td class="verdict (\w+)">(\d+) days left<\/td><\/tr>/g,
      ),
    ];
    expect(rows.map((r) => [r[1], r[4]])).toEqual([
      ['document signer', 'pass'],
      ['IACA root', 'pass'],
    ]);
    expect(rows[0]![2]).toMatch(/document signer/);
    expect(rows[1]![2]).toMatch(/CN=issuer-kit development IACA/);
    // The expiry shown is the certificate's own.
    const iaca = new X509Certificate(await iacaPem());
    const daysLeft = Math.floor((Date.parse(iaca.validTo) - Date.now()) / 86_400_000);
    expect(Number(rows[1]![5])).toBe(daysLeft);
  });

  it('the hosted door refuses MSO_MDOC, naming the field', async () => {
    const res = await issuer.post('/issue-vc', {
      holderDID: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
      pubKey: generateHolderKeyPair().publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
      proofType: 'MSO_MDOC',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { message: string; details: { field: string } };
    expect(body.details.field).toBe('proofType');
    expect(body.message).toMatch(/MSO_MDOC is not issued through this door.*OpenID4VCI/);
  });
});

describe('mdoc by direct issuance to a holder key', () => {
  const holder = () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const { kty, crv, x, y, d } = privateKey.export({ format: 'jwk' });
    return { publicJwk: { kty, crv, x, y }, privateJwk: { kty, crv, x, y, d } as Record<string, unknown> };
  };
  const body = (extra: Record<string, unknown>) => {
    const { vct: _vct, ...fields } = adaMembership();
    return {
      userId: 'ada@example.com',
      schemaId: 'membership-v1',
      proofType: 'MSO_MDOC',
      ...fields,
      ...extra,
    };
  };

  it('POST /admin/issue-vc with proofType MSO_MDOC answers the mdoc bound to the key; @auth0/mdl verifies it', async () => {
    const key = holder();
    const res = await issuer.admin(
      '/admin/issue-vc',
      body({ holderKey: key.publicJwk, reason: 'desk visit' }),
    );
    expect(res.status, await res.clone().text()).toBe(201);
    const answer = (await res.json()) as Record<string, any>;
    expect(answer).toMatchObject({
      schemaId: 'membership-v1',
      holderDid: `did:jwk:${Buffer.from(JSON.stringify(key.publicJwk)).toString('base64url')}`,
      storagePath: null,
      uploadState: 'none',
      credential: expect.any(String),
    });

    const { failed, passed } = await presentAndVerify(issuer.url, answer.credential, key.privateJwk);
    expect(failed).toEqual([]);
    expect(passed).toContainEqual(expect.stringMatching(/ISSUER_AUTH: Issuer certificate must be valid/));
    expect(passed).toContainEqual(expect.stringMatching(/ISSUER_AUTH: Issuer signature must be valid/));
    expect(passed).toContainEqual(expect.stringMatching(/DEVICE_AUTH: Device signature must be valid/));
    const document = parseIssuerSigned(Buffer.from(answer.credential, 'base64url'), DOC_TYPE);
    expect(Object.fromEntries(document.getIssuerNameSpace(DOC_TYPE)!)).toMatchObject({
      givenName: 'Ada',
      member_number: 7,
    });

    // Recorded like any direct credential (the email as its hash), with nothing uploaded; revocable.
    const history = (await (
      await issuer.admin(`/admin/issuance-history?email=ada%40example.com&proofType=MSO_MDOC`)
    ).json()) as { data: Array<{ credentialId: string; channel: string }> };
    expect(history.data.map((r) => [r.credentialId, r.channel])).toEqual([[answer.credentialId, 'direct']]);
    // Not renewed through the hosting service: it never went there.
    await expectError(
      await issuer.admin('/admin/renew', { credentialId: answer.credentialId, reason: 'renew' }),
      409,
      'CONFLICT',
      'credentialId',
    );
    const revoked = await issuer.admin('/admin/revoke', { revocationNonce: answer.revocationNonce });
    expect(revoked.status).toBe(200);
    const signer = new X509Certificate(document.issuerSigned.issuerAuth.certificate);
    expect(await cwtStatus(answer.status.uri, answer.status.idx, signer)).toBe(1);
  });

  it('refuses an mdoc without a holder key, with a vct or a private key, and a holder key for SD-JWT VC', async () => {
    const key = holder();
    const before = await queryStore<{ n: number | string }>(
      issuer.ctx.store,
      'SELECT COUNT(*) AS n FROM issuances',
    );
    await expectError(await issuer.admin('/admin/issue-vc', body({})), 400, 'INVALID_PARAMETER', 'holderKey');
    await expectError(
      await issuer.admin('/admin/issue-vc', body({ holderKey: key.publicJwk, vct: 'urn:vct:membership' })),
      400,
      'INVALID_PARAMETER',
      'vct',
    );
    const refused = await issuer.admin('/admin/issue-vc', body({ holderKey: key.privateJwk }));
    expect(refused.status).toBe(400);
    await expectError(
      await issuer.admin('/admin/issue-vc', {
        ...body({ holderKey: key.publicJwk }),
        proofType: 'SD_JWT_VC',
        vct: 'urn:vct:membership',
      }),
      400,
      'INVALID_PARAMETER',
      'holderKey',
    );
    const after = await queryStore<{ n: number | string }>(
      issuer.ctx.store,
      'SELECT COUNT(*) AS n FROM issuances',
    );
    expect(Number(after[0]!.n)).toBe(Number(before[0]!.n));
  });
});

describe.skipIf(!softHsmAvailable('the mdoc PKCS#11 test'))(
  'mdoc signed in a PKCS#11 token (SoftHSM2)',
  () => {
    let hsm: TestIssuer;
    beforeAll(async () => {
      const hsmDir = tempDir();
      hsm = await startIssuer({
        dir: hsmDir,
        env: { ...processToken().env, OID4VCI: 'on', SCHEMAS_DIR: writeSchemas(hsmDir) },
      });
    }, 120_000);
    afterAll(async () => {
      await hsm?.close();
    });

    it('the MSO is signed by the token-held key, and @auth0/mdl verifies it', async () => {
      expect(hsm.ctx.keys.current().signing.custody).toBe('pkcs11');
      const res = await hsm.admin('/admin/credential-offers', {
        schemaId: 'membership-v1',
        proofType: 'MSO_MDOC',
        userId: 'demo-user-1',
      });
      expect(res.status).toBe(201);
      const received = await receiveWithOpenid4vci(((await res.json()) as { offerUri: string }).offerUri);
      const holder = received.holder.privateKey.export({ format: 'jwk' }) as Record<string, unknown>;
      const { failed, passed } = await presentAndVerify(hsm.url, received.credential, holder);
      expect(failed).toEqual([]);
      expect(passed).toContainEqual(expect.stringMatching(/ISSUER_AUTH: Issuer signature must be valid/));
      // The document signer certifies the token's key.
      const document = parseIssuerSigned(Buffer.from(received.credential, 'base64url'));
      const signer = new X509Certificate(document.issuerSigned.issuerAuth.certificate);
      const tokenKey = hsm.ctx.keys.current().signing.publicKey.export({ format: 'der', type: 'spki' });
      expect(Buffer.from(signer.publicKey.export({ format: 'der', type: 'spki' })).equals(tokenKey)).toBe(
        true,
      );
    });
  },
);

/** The CWT Status List Token's entry `idx`, its signature checked with the document signer's key. */
async function cwtStatus(uri: string, idx: number, signer: X509Certificate): Promise<number> {
  const res = await fetch(uri, { headers: { accept: 'application/statuslist+cwt' } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/statuslist+cwt');
  const bytes = new Uint8Array(await res.arrayBuffer());
  expect(bytes[0]).toBe(0xd2); // CBOR tag 18: COSE_Sign1
  const [protectedBytes, , payloadBytes, signature] = cborDecode(bytes.subarray(1)) as [
    Uint8Array,
    unknown,
    Uint8Array,
    Uint8Array,
  ];
  const header = cborDecode(protectedBytes) as Map<number, unknown> | Record<number, unknown>;
  const get = (m: unknown, k: number | string) =>
    m instanceof Map ? m.get(k) : (m as Record<string, unknown>)[k];
  expect(get(header, 16)).toBe('application/statuslist+cwt');
  const toBeSigned = cborEncode(['Signature1', protectedBytes, new Uint8Array(), payloadBytes]);
  expect(
    verify(
      'sha256',
      toBeSigned,
      {
        key: createPublicKey(signer.publicKey.export({ format: 'pem', type: 'spki' })),
        dsaEncoding: 'ieee-p1363',
      },
      signature,
    ),
  ).toBe(true);
  const payload = cborDecode(payloadBytes);
  expect(get(payload, 2)).toBe(uri);
  const list = get(payload, 65533);
  const bits = get(list, 'bits') as number;
  const statuses = inflateSync(get(list, 'lst') as Uint8Array);
  const perByte = 8 / bits;
  return (statuses[Math.floor(idx / perByte)]! >> ((idx % perByte) * bits)) & ((1 << bits) - 1);
}

/**
 * The holder presents the mdoc (a device signature by the proof's key, built by @auth0/mdl) and
 * @auth0/mdl verifies it against the issuer's published IACA certificate: its checks, by outcome.
 */
async function presentAndVerify(
  url: string,
  credential: string,
  holderJwk: Record<string, unknown>,
): Promise<{ failed: string[]; passed: string[] }> {
  const document = parseIssuerSigned(Buffer.from(credential, 'base64url'), DOC_TYPE);
  const iaca = await (await fetch(`${url}/.well-known/mdoc-iaca.pem`)).text();
  const issuedOnly = new AnimoMDoc([document]).encode();
  const transcript = Buffer.from(cborEncode(DataItem.fromData([null, null, 'mdoc-issuance test'])));
  const presentation = await DeviceResponse.from(parse(issuedOnly))
    .usingPresentationDefinition({
      id: 'membership',
      input_descriptors: [
        {
          id: DOC_TYPE,
          format: { mso_mdoc: { alg: ['ES256'] } },
          constraints: {
            limit_disclosure: 'required',
            fields: [{ path: ["$['org.example.membership.1']['member_number']"], intent_to_retain: false }],
          },
        },
      ],
    })
    .usingSessionTranscriptBytes(transcript)
    .authenticateWithSignature(holderJwk, 'ES256')
    .sign();
  const failed: string[] = [];
  const passed: string[] = [];
  await new Verifier([iaca]).verify(presentation.encode(), {
    encodedSessionTranscript: transcript,
    onCheck: (check) => {
      if (check.status === 'FAILED') failed.push(`${check.category}: ${check.check} ${check.reason ?? ''}`);
      else passed.push(`${check.category}: ${check.check}`);
    },
  });
  return { failed, passed };
}
