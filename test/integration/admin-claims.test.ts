import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { expectError } from '../helpers/errors.js';
import { removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';

const claims = {
  givenName: 'Fay',
  familyName: 'Ng',
  memberSince: '2018-05-05',
  tier: 'basic',
  memberNumber: 12,
};

// `POST /admin/claims` (docs/schemas-and-claims.md provider "sqlite"), the route behind `admin claims import`.
describe('admin claims import', () => {
  let issuer: TestIssuer;
  let schemasDir: string;
  const holder = generateHolderKeyPair();

  beforeAll(async () => {
    schemasDir = tempDir();
    cpSync(join(process.cwd(), 'schemas'), schemasDir, { recursive: true });
    writeFileSync(
      join(schemasDir, 'remote.json'),
      JSON.stringify({
        schemaId: 'remote-v1',
        title: 'Remote',
        proofTypes: ['SD_JWT_VC'],
        expiresInSeconds: 3600,
        credentialSubject: { type: 'object' },
        claims: { provider: 'http', url: 'http://127.0.0.1:9/lookup' },
        sdJwt: { vct: 'urn:vct:remote' },
      }),
    );
    issuer = await startIssuer({ env: { SCHEMAS_DIR: schemasDir }, exampleClaimsFile: '' });
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(schemasDir);
  });

  const eligible = async (userId: string) => {
    const res = await issuer.post('/available-vc', {
      holderDID: 'did:example:c',
      pubKey: holder.publicKeyHex,
      userId,
      schemaId: 'membership-v1',
    });
    return ((await res.json()) as { data: unknown[] }).data.length > 0;
  };

  it('upserts records that the sqlite provider then answers', async () => {
    expect(await eligible('import-1')).toBe(false);
    const res = await issuer.admin('/admin/claims', {
      records: [
        { userId: 'import-1', schemaId: 'membership-v1', claims },
        { userId: 'import-2', schemaId: 'membership-v1', claims, expiresAt: '2001-01-01T00:00:00Z' },
      ],
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ upserted: 2 });
    expect(await eligible('import-1')).toBe(true);
    // An expiry in the past: stored, but no longer eligible.
    expect(await eligible('import-2')).toBe(false);
    // Upsert: a second import replaces the claims.
    await issuer.admin('/admin/claims', {
      records: [{ userId: 'import-2', schemaId: 'membership-v1', claims }],
    });
    expect(await eligible('import-2')).toBe(true);
  });

  it.each([
    ['no records', { records: [] }, 400, 'INVALID_PARAMETER', 'records'],
    [
      'missing userId',
      { records: [{ schemaId: 'membership-v1', claims }] },
      400,
      'INVALID_PARAMETER',
      'records.0.userId',
    ],
    [
      'unknown schema',
      {
        records: [
          { userId: 'u', schemaId: 'membership-v1', claims },
          { userId: 'u', schemaId: 'nope', claims },
        ],
      },
      400,
      'INVALID_PARAMETER',
      'records.1.schemaId',
    ],
    [
      'a schema whose claims come from elsewhere',
      { records: [{ userId: 'u', schemaId: 'remote-v1', claims: {} }] },
      400,
      'INVALID_PARAMETER',
      'records.0.schemaId',
    ],
    [
      'claims that do not fit the schema',
      { records: [{ userId: 'u', schemaId: 'membership-v1', claims: { ...claims, tier: 'bronze' } }] },
      422,
      'CLAIMS_INVALID',
      'records.0.claims.tier',
    ],
    [
      'a reserved claim',
      { records: [{ userId: 'u', schemaId: 'membership-v1', claims: { ...claims, sub: 'x' } }] },
      422,
      'CLAIMS_INVALID',
      'records.0.claims.sub',
    ],
  ])('%s', async (_name, body, status, code, field) => {
    const res = await issuer.admin('/admin/claims', body);
    await expectError(res, status, code, field);
    expect(await eligible('u')).toBe(false);
  });
});
