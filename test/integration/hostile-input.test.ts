import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import type { ServiceClient } from '../../src/service-client/service-client.js';
import { expectError } from '../helpers/errors.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { startIssuer, TEST_ADMIN_API_KEY, TEST_API_KEY, type TestIssuer } from '../helpers/issuer.js';

/** `{ a: { a: … 1 } }` nested `depth` objects deep, built as text (JSON.stringify would recurse). */
const deepJson = (depth: number, key = 'a'): string => `${`{"${key}":`.repeat(depth)}1${'}'.repeat(depth)}`;
/** A JSON body with `inner` spliced in as the value of `field` (a deep member inside a valid body). */
const withMember = (body: Record<string, unknown>, field: string, inner: string): string =>
  JSON.stringify({ ...body, [field]: '__DEEP__' }).replace('"__DEEP__"', inner);

const P256 = {
  kty: 'EC',
  crv: 'P-256',
  x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
  y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
};

// Red-team findings: hostile bodies get a 400 naming the field, never a 500.
describe('hostile input', () => {
  let issuer: TestIssuer;
  const holder = generateHolderKeyPair();
  const hosted = {
    holderDID: 'did:example:hostile',
    pubKey: holder.publicKeyHex,
    userId: 'demo-user-1',
    schemaId: 'membership-v1',
  };
  const direct = {
    userId: 'hostile@example.com',
    schemaId: 'membership-v1',
    vct: 'https://issuer.example/vct/membership-v1',
    credentialSubject: { givenName: 'Eve' },
  };
  const adminRaw = (path: string, raw: string, headers: Record<string, string> = {}) =>
    fetch(`${issuer.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY, ...headers },
      body: raw,
    });

  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
  });

  describe('item 1: nesting depth is bounded when a body is parsed', () => {
    it('/admin/revoke with an Idempotency-Key and a 5,000-deep body → 400 naming the path', async () => {
      const res = await adminRaw('/admin/revoke', withMember({ revocationNonce: 1 }, 'x', deepJson(5000)), {
        'idempotency-key': 'deep-1',
      });
      const body = await expectError(res, 400, 'INVALID_PARAMETER');
      expect(body.details?.field).toMatch(/^x(\.a)+$/);
    });

    it('/admin/issue-vc with a deep disclosureFrame → 400 naming disclosureFrame…', async () => {
      const res = await adminRaw(
        '/admin/issue-vc',
        withMember(direct, 'disclosureFrame', deepJson(5000, 'givenName')),
        {
          'idempotency-key': 'deep-2',
        },
      );
      const body = await expectError(res, 400, 'INVALID_PARAMETER');
      expect(body.details?.field).toMatch(/^disclosureFrame(\.givenName)+$/);
    });

    it('/admin/issue-vc/validate with a deep frame → 400', async () => {
      const rows = `{"rows":[{"schemaId":"membership-v1","credentialSubject":{},"disclosureFrame":${deepJson(5000)}}]}`;
      const body = await expectError(
        await adminRaw('/admin/issue-vc/validate', rows),
        400,
        'INVALID_PARAMETER',
      );
      expect(body.details?.field).toMatch(/^rows\.0\.disclosureFrame(\.a)+$/);
    });

    it('/issue-vc with an 8,000-deep member inside signingKey.jwk → 400 naming signingKey.jwk…', async () => {
      const jwk = JSON.stringify({ ...P256, junk: '__DEEP__' }).replace('"__DEEP__"', deepJson(8000));
      const res = await issuer.post('/issue-vc', withMember(hosted, 'signingKey', `{"jwk":${jwk}}`));
      const body = await expectError(res, 400, 'INVALID_PARAMETER');
      expect(body.details?.field).toMatch(/^signingKey\.jwk\.junk(\.a)+$/);
    });

    it('deep arrays count too', async () => {
      const res = await issuer.post(
        '/issue-vc',
        withMember(hosted, 'x', `${'['.repeat(5000)}${']'.repeat(5000)}`),
      );
      const body = await expectError(res, 400, 'INVALID_PARAMETER');
      expect(body.details?.field).toMatch(/^x(\.0)+$/);
    });
  });

  describe('item 2: cnf.jwk carries only the public members of an accepted holder key', () => {
    const issueWith = (jwk: unknown, holderDID: string) =>
      issuer.post('/issue-vc', { ...hosted, holderDID, signingKey: { jwk } });

    it('jku, x5u, alg none, a path kid and junk are left out of cnf.jwk', async () => {
      const holderDID = 'did:example:cnf-strip';
      const res = await issueWith(
        {
          ...P256,
          jku: 'https://evil.example/jwks',
          x5u: 'https://evil.example/cert',
          alg: 'none',
          kid: '../../../etc/passwd',
          junk: 'x'.repeat(10_000),
        },
        holderDID,
      );
      expect(res.status).toBe(201);
      const stored = [...issuer.emulator!.state.envelopes.values()].find(
        (e) => e.envelope.holderDid === holderDID,
      )!;
      const verified = await verifySdJwtVc(
        issuer.url,
        openEnvelope(holder.privateKey, stored.envelope) as string,
      );
      expect((verified.payload as { cnf: unknown }).cnf).toEqual({ jwk: P256 });
    });

    it('an RSA key (with or without q, dp, dq, qi) is refused', async () => {
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const pub = publicKey.export({ format: 'jwk' });
      const { q, dp, dq, qi } = privateKey.export({ format: 'jwk' });
      await expectError(
        await issueWith(pub, 'did:example:rsa'),
        400,
        'INVALID_PARAMETER',
        'signingKey.jwk.kty',
      );
      await expectError(
        await issueWith({ ...pub, q, dp, dq, qi }, 'did:example:rsa2'),
        400,
        'INVALID_PARAMETER',
        'signingKey.jwk.kty',
      );
    });

    it('an unsupported curve, a private member or a coordinate of the wrong length → 400 naming it', async () => {
      await expectError(
        await issueWith({ ...P256, crv: 'secp256k1' }, 'did:example:k1'),
        400,
        'INVALID_PARAMETER',
        'signingKey.jwk.crv',
      );
      await expectError(
        await issueWith({ ...P256, d: 'AAAA' }, 'did:example:d'),
        400,
        'INVALID_PARAMETER',
        'signingKey.jwk.d',
      );
      await expectError(
        await issueWith({ ...P256, x: 'AAAA' }, 'did:example:short'),
        400,
        'INVALID_PARAMETER',
        'signingKey.jwk.x',
      );
      // A point that is not on the curve.
      await expectError(
        await issueWith({ ...P256, y: P256.x }, 'did:example:offcurve'),
        400,
        'INVALID_PARAMETER',
        'signingKey.jwk',
      );
    });

    it('Ed25519 (OKP) and P-384 holder keys are accepted, public members only', async () => {
      const ed = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
      expect((await issueWith({ ...ed, use: 'sig' }, 'did:example:ed')).status).toBe(201);
      const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ format: 'jwk' });
      expect((await issueWith(p384, 'did:example:p384')).status).toBe(201);
    });

    // RFC 8032 §5.1.3 and the small-order blocklist every Ed25519 library carries (libsodium's):
    // a key any signature can be made to verify against is no binding at all.
    const SMALL_ORDER_ED25519 = [
      '0000000000000000000000000000000000000000000000000000000000000000',
      '0000000000000000000000000000000000000000000000000000000000000080',
      '0100000000000000000000000000000000000000000000000000000000000000',
      'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
      'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
      'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa',
      '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
      '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85',
    ];
    it.each(SMALL_ORDER_ED25519)('a small-order Ed25519 point (%s) is refused', async (hex) => {
      const jwk = { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(hex, 'hex').toString('base64url') };
      await expectError(
        await issueWith(jwk, 'did:example:small-order'),
        400,
        'INVALID_PARAMETER',
        'signingKey.jwk',
      );
    });

    it('a non-canonical Ed25519 y (p + 1) is refused', async () => {
      const p = 2n ** 255n - 19n;
      const nonCanonical = Buffer.from((p + 1n).toString(16).padStart(64, '0'), 'hex').reverse();
      const jwk = { kty: 'OKP', crv: 'Ed25519', x: nonCanonical.toString('base64url') };
      await expectError(
        await issueWith(jwk, 'did:example:odd-point'),
        400,
        'INVALID_PARAMETER',
        'signingKey.jwk',
      );
    });

    it('a coordinate whose base64url has stray bits (a second spelling of the same key) is refused', async () => {
      const last = P256.x.at(-1)!;
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const stray = alphabet[alphabet.indexOf(last) | 1]!;
      expect(Buffer.from(P256.x.slice(0, -1) + stray, 'base64url')).toEqual(Buffer.from(P256.x, 'base64url'));
      const jwk = { ...P256, x: P256.x.slice(0, -1) + stray };
      await expectError(
        await issueWith(jwk, 'did:example:stray'),
        400,
        'INVALID_PARAMETER',
        'signingKey.jwk',
      );
    });
  });

  describe('item 9: an unsupported body encoding is 415 UNSUPPORTED_MEDIA_TYPE', () => {
    it('content-encoding the server does not speak', async () => {
      const res = await fetch(`${issuer.url}/issue-vc`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-encoding': 'br-nope',
          'x-api-key': TEST_API_KEY,
        },
        body: JSON.stringify(hosted),
      });
      await expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it('a charset the server does not speak', async () => {
      const res = await fetch(`${issuer.url}/issue-vc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=klingon', 'x-api-key': TEST_API_KEY },
        body: JSON.stringify(hosted),
      });
      await expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });
  });
});

// Item 3: identical /issue-vc requests at the same moment all get 201 while the upstream is healthy.
describe('concurrent identical /issue-vc', () => {
  let issuer: TestIssuer;
  /** Holds every upload until released, so the identical requests overlap for certain. */
  let release: () => void = () => {};
  let gate: Promise<void> = Promise.resolve();
  const uploadsStarted: string[] = [];
  let uploadWaits = 0;

  beforeAll(async () => {
    issuer = await startIssuer({
      beforeServe: (ctx) => {
        const within = ctx.issuance.uploadWithinRequest.bind(ctx.issuance);
        ctx.issuance.uploadWithinRequest = (record, ...rest) => {
          uploadWaits++;
          return within(record, ...rest);
        };
        const client = ctx.serviceClient;
        const store = client.storeEnvelope.bind(client);
        (client as { storeEnvelope: ServiceClient['storeEnvelope'] }).storeEnvelope = async (
          envelope,
          proofType,
        ) => {
          uploadsStarted.push(envelope.externalId);
          await gate;
          return store(envelope, proofType);
        };
      },
    });
  });
  afterAll(async () => {
    await issuer.close();
  });

  it('the later callers wait for the first upload instead of answering 502', async () => {
    const holder = generateHolderKeyPair();
    const body = {
      holderDID: 'did:example:concurrent',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    };
    gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = issuer.post('/issue-vc', body);
    await expect.poll(() => uploadsStarted.length).toBe(1);
    const rest = Array.from({ length: 5 }, () => issuer.post('/issue-vc', body));
    // Every repeat reaches the upload step (recording nothing new) before the upload is let through.
    await expect.poll(() => uploadWaits).toBe(6);
    expect(await issuer.ctx.store.issuances.countPendingUploads()).toBe(1);
    release();
    const statuses = await Promise.all([first, ...rest].map(async (p) => (await p).status));
    expect(statuses).toEqual([201, 201, 201, 201, 201, 201]);
    expect(new Set(uploadsStarted).size).toBe(1);
  });

  it('a second process on the same database waits for the first one’s upload', async () => {
    let otherWaits = 0;
    const other = await startIssuer({
      dir: issuer.dir,
      env: { SERVICE_V1_BASE_URL: issuer.ctx.config.serviceBaseUrl! },
      exampleClaimsFile: '',
      beforeServe: (ctx) => {
        const within = ctx.issuance.uploadWithinRequest.bind(ctx.issuance);
        ctx.issuance.uploadWithinRequest = (record, ...rest) => {
          otherWaits++;
          return within(record, ...rest);
        };
      },
    });
    try {
      const holder = generateHolderKeyPair();
      const body = {
        holderDID: 'did:example:two-processes',
        pubKey: holder.publicKeyHex,
        userId: 'demo-user-1',
        schemaId: 'membership-v1',
      };
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const started = uploadsStarted.length;
      const first = issuer.post('/issue-vc', body);
      await expect.poll(() => uploadsStarted.length).toBe(started + 1);
      const second = other.post('/issue-vc', body);
      // The second process finds the recorded issuance and reaches its upload, leased by the first.
      await expect.poll(() => otherWaits).toBe(1);
      release();
      expect((await first).status).toBe(201);
      expect((await second).status).toBe(201);
      expect(uploadsStarted.length).toBe(started + 1);
    } finally {
      await other.close();
    }
  });
});
