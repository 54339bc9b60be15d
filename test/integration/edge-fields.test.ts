import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { expectError } from '../helpers/errors.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const postgres = await postgresAvailable('field limits on PostgreSQL');
const engines = postgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

// docs/interface.md "Field limits": a holder DID the hosting service would refuse is refused
// here, before anything is signed or recorded; indexed text is bounded in UTF-8 bytes, the same
// on both engines; a wrong JSON type is named as such, not as "required".
describe.each(engines)('edge field rules (%s)', (engine) => {
  let issuer: TestIssuer;
  let db: TempDatabase | undefined;
  const holder = generateHolderKeyPair();
  const hosted = (holderDID: unknown) => ({
    holderDID,
    pubKey: holder.publicKeyHex,
    userId: 'demo-user-1',
    schemaId: 'membership-v1',
  });
  const recorded = async () => {
    const res = await issuer.admin('/admin/issuance-history?limit=1&total=true');
    expect(res.status).toBe(200);
    return ((await res.json()) as { pagination: { total: number } }).pagination.total;
  };

  beforeAll(async () => {
    db = engine === 'postgres' ? await createMigratedDatabase() : undefined;
    issuer = await startIssuer(db ? { env: { DATABASE_URL: db.url } } : {});
  });
  afterAll(async () => {
    await issuer.close();
    await db?.drop();
  });

  it.each([
    'not a did',
    'constructor',
    'did:Example:UPPER',
    'did:web:',
    'did::x',
    'did:web:example.com/path',
    'did:web:example.com#key-1',
    `did:example:${'x'.repeat(1100)}`,
  ])(
    '/issue-vc and /available-vc refuse holderDID %j with 400 naming it; nothing signed or uploaded',
    async (did) => {
      await expectError(await issuer.post('/issue-vc', hosted(did)), 400, 'INVALID_PARAMETER', 'holderDID');
      await expectError(
        await issuer.post('/available-vc', hosted(did)),
        400,
        'INVALID_PARAMETER',
        'holderDID',
      );
      expect(await recorded()).toBe(0);
      expect(issuer.emulator?.state.envelopes.size).toBe(0);
    },
  );

  it('a holder DID of 2,036 CJK characters (6,108 bytes) is a 400, not a 500 from the index', async () => {
    // Percent-encoded, as DID syntax wants non-ASCII: still far over the byte bound.
    const cjk = encodeURIComponent('漢'.repeat(2036));
    await expectError(
      await issuer.post('/issue-vc', hosted(`did:example:${cjk}`)),
      400,
      'INVALID_PARAMETER',
      'holderDID',
    );
    expect(await recorded()).toBe(0);
  });

  it('a userId of 2,048 CJK characters on /admin/claims is a 400 naming the field', async () => {
    const res = await issuer.admin('/admin/claims', {
      records: [{ userId: '漢'.repeat(2048), schemaId: 'membership-v1', claims: { givenName: 'A' } }],
    });
    await expectError(res, 400, 'INVALID_PARAMETER', 'records.0.userId');
  });

  it('the longest accepted values (1,024-byte holder DID and userId) are stored and found again', async () => {
    const did = `did:example:${'d'.repeat(1024 - 'did:example:'.length)}`;
    const userId = '漢'.repeat(341); // 1,023 bytes
    const claims = await issuer.admin('/admin/claims', {
      records: [
        {
          userId,
          schemaId: 'membership-v1',
          claims: {
            givenName: 'Long',
            familyName: 'Name',
            memberSince: '2024-01-01',
            tier: 'gold',
            memberNumber: 7,
          },
        },
      ],
    });
    expect(claims.status).toBe(200);
    const res = await issuer.post('/issue-vc', { ...hosted(did), userId });
    expect(res.status).toBe(201);
    const history = await issuer.admin(`/admin/issuance-history?holderDid=${encodeURIComponent(did)}`);
    expect(((await history.json()) as { data: unknown[] }).data).toHaveLength(1);
  });

  it('a wrong JSON type is "expected a string", a missing field "required"', async () => {
    const wrong = await expectError(
      await issuer.post('/issue-vc', hosted(0)),
      400,
      'INVALID_PARAMETER',
      'holderDID',
    );
    expect(wrong.details?.issues?.[0]?.message).toMatch(/^expected a string/);
    const { holderDID: _, ...missing } = hosted('x');
    const none = await expectError(
      await issuer.post('/issue-vc', missing),
      400,
      'INVALID_PARAMETER',
      'holderDID',
    );
    expect(none.details?.issues?.[0]?.message).toBe('required');
  });
});
