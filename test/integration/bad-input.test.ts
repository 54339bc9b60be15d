import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { expectError } from '../helpers/errors.js';
import { queryStore, startIssuer, TEST_API_KEY, type TestIssuer } from '../helpers/issuer.js';

// docs/interface.md "Authentication" and "Errors": every bad input gets a clear JSON error; nothing crashes.
describe('holder routes reject bad input', () => {
  let issuer: TestIssuer;
  const holder = generateHolderKeyPair();
  const valid = {
    holderDID: 'did:example:bad',
    pubKey: holder.publicKeyHex,
    userId: 'demo-user-1',
    schemaId: 'membership-v1',
  };

  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
  });

  it.each(['/available-vc', '/issue-vc'])('%s: missing or wrong x-api-key → 403 FORBIDDEN', async (path) => {
    await expectError(await issuer.post(path, valid, { 'x-api-key': '' }), 403, 'FORBIDDEN');
    await expectError(await issuer.post(path, valid, { 'x-api-key': `${TEST_API_KEY}x` }), 403, 'FORBIDDEN');
    await expectError(await issuer.post(path, valid, { 'x-api-key': 'short' }), 403, 'FORBIDDEN');
  });

  it('malformed JSON → 400', async () => {
    await expectError(await issuer.post('/issue-vc', '{"holderDID": '), 400, 'INVALID_PARAMETER');
  });

  it.each([
    ['/available-vc', 'holderDID'],
    ['/available-vc', 'userId'],
    ['/available-vc', 'pubKey'],
    ['/issue-vc', 'holderDID'],
    ['/issue-vc', 'userId'],
    ['/issue-vc', 'pubKey'],
    ['/issue-vc', 'schemaId'],
  ])('%s without %s → 400 naming it', async (path, field) => {
    const body: Record<string, unknown> = { ...valid };
    delete body[field];
    await expectError(await issuer.post(path, body), 400, 'INVALID_PARAMETER', field);
  });

  it('issue-vc with encryptionKey and no pubKey is accepted', async () => {
    const { pubKey: _p, ...rest } = valid;
    expect(
      (
        await issuer.post('/issue-vc', {
          ...rest,
          holderDID: 'did:example:enc',
          encryptionKey: holder.publicKeyHex,
        })
      ).status,
    ).toBe(201);
  });

  it('wrong types → 400 naming the field', async () => {
    await expectError(
      await issuer.post('/issue-vc', { ...valid, userId: 42 }),
      400,
      'INVALID_PARAMETER',
      'userId',
    );
    await expectError(
      await issuer.post('/available-vc', { ...valid, schemaId: ['a'] }),
      400,
      'INVALID_PARAMETER',
      'schemaId',
    );
    await expectError(
      await issuer.post('/issue-vc', { ...valid, signingKey: 'nope' }),
      400,
      'INVALID_PARAMETER',
      'signingKey',
    );
    await expectError(await issuer.post('/issue-vc', [valid]), 400, 'INVALID_PARAMETER');
  });

  it.each([
    ['not hex', 'zz-not-hex'],
    ['odd length', `${holder.publicKeyHex}0`],
    ['not SPKI', 'deadbeef'],
    [
      'Ed25519 SPKI',
      '302a300506032b6570032100d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    ],
  ])('pubKey %s → 400', async (_name, pubKey) => {
    await expectError(
      await issuer.post('/issue-vc', { ...valid, pubKey }),
      400,
      'INVALID_PARAMETER',
      'pubKey',
    );
    await expectError(
      await issuer.post('/available-vc', { ...valid, pubKey }),
      400,
      'INVALID_PARAMETER',
      'pubKey',
    );
  });

  it('unknown schemaId on issue-vc → 404', async () => {
    await expectError(await issuer.post('/issue-vc', { ...valid, schemaId: 'nope-v9' }), 404, 'NOT_FOUND');
  });

  it('unsupported proofType → 400', async () => {
    await expectError(
      await issuer.post('/issue-vc', { ...valid, proofType: 'RSA_2048' }),
      400,
      'INVALID_PARAMETER',
      'proofType',
    );
    await expectError(
      await issuer.post('/available-vc', { ...valid, proofType: 'RSA_2048' }),
      400,
      'INVALID_PARAMETER',
      'proofType',
    );
  });

  it('body over 100 KB → 413', async () => {
    await expectError(
      await issuer.post('/issue-vc', { ...valid, pad: 'x'.repeat(101 * 1024) }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
  });

  it('malformed percent-encoding in a path → 400, not 500', async () => {
    for (const path of ['/revocation-status/%E0', '/statuslist/%', '/credential-status/%zz']) {
      await expectError(await fetch(`${issuer.url}${path}`), 400, 'INVALID_PARAMETER');
    }
  });

  it('unknown route → 404 JSON', async () => {
    await expectError(await fetch(`${issuer.url}/nope`), 404, 'NOT_FOUND');
    await expectError(await issuer.post('/issue-vc/extra', valid), 404, 'NOT_FOUND');
  });

  it('user with no claims → 404 on issue-vc, nothing signed', async () => {
    await expectError(
      await issuer.post('/issue-vc', { ...valid, userId: 'nobody' }),
      404,
      'NOT_FOUND',
      'userId',
    );
  });

  it('claims that fail the schema → 422 naming the claim, nothing signed or stored', async () => {
    await issuer.ctx.store.claims.upsertClaims([
      {
        userId: 'bad-claims',
        schemaId: 'membership-v1',
        claims: { givenName: 'X', familyName: 'Y', memberSince: 'yesterday', tier: 'gold', memberNumber: 1 },
        expiresAt: null,
      },
    ]);
    const before = issuer.emulator!.state.envelopes.size;
    const body = await expectError(
      await issuer.post('/issue-vc', { ...valid, userId: 'bad-claims' }),
      422,
      'CLAIMS_INVALID',
    );
    expect(JSON.stringify(body)).toContain('memberSince');
    expect(issuer.emulator!.state.envelopes.size).toBe(before);
    const [row] = await queryStore<{ n: number | string }>(
      issuer.ctx.store,
      "SELECT COUNT(*) AS n FROM issuances WHERE user_id = 'bad-claims'",
    );
    expect(Number(row!.n)).toBe(0);
  });

  it('no input produces a 5xx: a burst of junk bodies', async () => {
    const junk: unknown[] = [
      null,
      0,
      'x',
      true,
      {},
      { holderDID: {} },
      { holderDID: 'a', userId: 'b', pubKey: '0x', schemaId: '' },
      { holderDID: 'a'.repeat(5000), userId: 'b', pubKey: holder.publicKeyHex, schemaId: 'membership-v1' },
    ];
    for (const body of junk) {
      for (const path of ['/available-vc', '/issue-vc']) {
        const res = await issuer.post(path, JSON.stringify(body));
        expect(res.status, `${path} ${JSON.stringify(body)?.slice(0, 40)}`).toBeLessThan(500);
        await res.body?.cancel();
      }
    }
  });
});
