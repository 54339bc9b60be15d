import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { expectError } from '../helpers/errors.js';
import { removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';

const RECORD_FIELDS = [
  'credentialId',
  'channel',
  'holderDid',
  'schemaId',
  'proofType',
  'revocationNonce',
  'status',
  'statusList',
  'kid',
  'createdAt',
  'expiresAt',
  'revokedAt',
  'uploadState',
  'storagePath',
  'renewedFrom',
  'renewedBy',
].sort();

interface HistoryRecord {
  credentialId: string;
  holderDid: string;
  schemaId: string;
  proofType: string;
  revocationNonce: string;
  status: string;
  statusList: { idx: number; uri: string } | null;
  kid: string;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
  uploadState: string;
  storagePath: string | null;
}
interface HistoryPage {
  data: HistoryRecord[];
  pagination: { page?: number; limit: number; total?: number; nextCursor: string | null };
}

const days = (n: number) => new Date(Date.now() + n * 86400_000).toISOString();

/** A schemas folder with the shipped schema and a second SD-JWT-only one. */
function schemasWithEmployee(): string {
  const dir = tempDir();
  cpSync(join(process.cwd(), 'schemas'), dir, { recursive: true });
  writeFileSync(
    join(dir, 'employee-v1.json'),
    JSON.stringify({
      schemaId: 'employee-v1',
      title: 'Employee',
      proofTypes: ['SD_JWT_VC'],
      expiresInSeconds: 86400,
      credentialSubject: {
        type: 'object',
        properties: { employer: { type: 'string' }, role: { type: 'string' } },
        required: ['employer'],
        additionalProperties: false,
      },
      claims: { provider: 'sqlite' },
      sdJwt: { vct: 'urn:vct:employee' },
    }),
  );
  return dir;
}

// `GET /admin/issuance-history` (docs/interface.md "Route table"): paging, order, every filter, metadata only.
describe('admin issuance history', () => {
  let issuer: TestIssuer;
  let schemasDir: string;
  const page = async (query: string) => {
    const res = await issuer.admin(`/admin/issuance-history${query}`);
    expect(res.status).toBe(200);
    return (await res.json()) as HistoryPage;
  };
  const issue = async (
    email: string,
    schemaId: string,
    subject: Record<string, unknown>,
    expiration = days(365),
  ) => {
    const res = await issuer.admin('/admin/issue-vc', {
      userId: email,
      schemaId,
      vct: `urn:vct:${schemaId}`,
      expiration,
      credentialSubject: subject,
    });
    expect([201, 202]).toContain(res.status);
    return (await res.json()) as { credentialId: string; revocationNonce: string; holderDid: string };
  };
  const member = {
    givenName: 'Dirk',
    familyName: 'Secretvalue',
    memberSince: '2019-01-01',
    tier: 'gold',
    memberNumber: 5,
  };

  let alice: Array<{ credentialId: string; revocationNonce: string; holderDid: string }> = [];
  let bob: { credentialId: string; revocationNonce: string; holderDid: string };
  let shortLived: { credentialId: string; revocationNonce: string };
  let suspended: { credentialId: string; revocationNonce: string };
  let pending: { credentialId: string; revocationNonce: string };
  let bjjCredentialId: string;

  beforeAll(async () => {
    schemasDir = schemasWithEmployee();
    issuer = await startIssuer({ env: { SCHEMAS_DIR: schemasDir, STATUS_LIST_BITS: '2' } });
    alice = [];
    for (let i = 0; i < 7; i++) alice.push(await issue('alice.history@example.org', 'membership-v1', member));
    bob = await issue('bob.history@example.org', 'employee-v1', { employer: 'Acme', role: 'Secretrole' });
    shortLived = await issue('carol.history@example.org', 'membership-v1', member, days(1));
    suspended = await issue('dave.history@example.org', 'membership-v1', member);
    expect((await issuer.admin('/admin/revoke', { revocationNonce: alice[0]!.revocationNonce })).status).toBe(
      200,
    );
    expect(
      (await issuer.admin('/admin/suspend', { revocationNonce: suspended.revocationNonce })).status,
    ).toBe(200);
    // A hosted Iden3 issuance, for the proofType filter.
    const holder = generateHolderKeyPair();
    const bjj = await issuer.post('/issue-vc', {
      holderDID: 'did:example:history-bjj',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
      proofType: 'BJJ_SIG_2021',
    });
    expect(bjj.status).toBe(201);
    bjjCredentialId = (await page('?proofType=BJJ_SIG_2021')).data[0]!.credentialId;
    // Last: an upload that fails and stays pending while the assertions run. The outbox worker
    // would retry it (5-50 ms apart in tests) and give up after UPLOAD_MAX_ATTEMPTS, turning it
    // `failed` within a second whatever the fault count: so every earlier upload is first seen
    // delivered, then the worker stops (waiting for any attempt in flight) and only the request's
    // own attempt is made, and refused.
    await vi.waitFor(async () => expect((await page('?status=upload_pending')).data).toEqual([]), {
      timeout: 60_000,
      interval: 20,
    });
    await issuer.ctx.outbox.stop();
    issuer.emulator!.faults.failNext('dstorage', 1000, 503);
    pending = await issue('erin.history@example.org', 'membership-v1', member);
  });
  afterAll(async () => {
    issuer.emulator!.faults.clear();
    await issuer.close();
    removeDir(schemasDir);
  });

  it('answers records with exactly the documented fields and never a claim value', async () => {
    const res = await page('?limit=100&total=true');
    expect(res.pagination).toEqual({ page: 1, limit: 100, nextCursor: null, total: 12 });
    for (const r of res.data) expect(Object.keys(r).sort()).toEqual(RECORD_FIELDS);
    const text = JSON.stringify(res);
    for (const secret of ['Secretvalue', 'Secretrole', 'Dirk', 'Acme', 'alice.history'])
      expect(text).not.toContain(secret);
    const first = res.data.find((r) => r.credentialId === alice[1]!.credentialId)!;
    expect(first).toEqual({
      credentialId: alice[1]!.credentialId,
      channel: 'direct',
      holderDid: alice[1]!.holderDid,
      schemaId: 'membership-v1',
      proofType: 'SD_JWT_VC',
      revocationNonce: alice[1]!.revocationNonce,
      status: 'valid',
      statusList: { idx: expect.any(Number), uri: expect.stringMatching(/\/statuslist\/\d+$/) },
      kid: issuer.ctx.keys.current().signing.kid,
      createdAt: expect.stringMatching(/Z$/),
      expiresAt: expect.stringMatching(/Z$/),
      revokedAt: null,
      uploadState: 'uploaded',
      storagePath: expect.any(String),
      renewedFrom: null,
      renewedBy: null,
    });
    const revoked = res.data.find((r) => r.credentialId === alice[0]!.credentialId)!;
    expect(revoked.status).toBe('revoked');
    expect(revoked.revokedAt).toMatch(/Z$/);
    expect(res.data.find((r) => r.credentialId === bjjCredentialId)!.statusList).toBeNull();
  });

  it('defaults to page 1 of 25, newest first, with a total (docs/interface.md "Paging")', async () => {
    const res = await page('');
    expect(res.pagination).toEqual({ page: 1, limit: 25, total: 12, nextCursor: null });
    expect(res.data[0]!.credentialId).toBe(pending.credentialId);
    const times = res.data.map((r) => r.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it('pages by number (OFFSET, with a total) without gaps or overlaps, in both orders', async () => {
    const holder = `&holderDid=${encodeURIComponent(alice[0]!.holderDid)}`;
    const pages = [
      await page(`?limit=3&page=1${holder}`),
      await page(`?limit=3&page=2${holder}`),
      await page(`?limit=3&page=3${holder}`),
    ];
    expect(pages.map((p) => p.data.length)).toEqual([3, 3, 1]);
    expect(pages.map((p) => p.pagination)).toEqual([
      { page: 1, limit: 3, total: 7, nextCursor: expect.any(String) },
      { page: 2, limit: 3, total: 7, nextCursor: expect.any(String) },
      { page: 3, limit: 3, total: 7, nextCursor: null },
    ]);
    const desc = pages.flatMap((p) => p.data.map((r) => r.credentialId));
    expect(desc).toEqual(alice.map((a) => a.credentialId).reverse());
    const asc = await page(`?limit=100&order=createdAt_asc${holder}`);
    expect(asc.data.map((r) => r.credentialId)).toEqual(alice.map((a) => a.credentialId));
    expect((await page(`?limit=3&page=4${holder}`)).data).toEqual([]);
  });

  it('filters by holderDid, schemaId, revocationNonce and proofType', async () => {
    const byHolder = await page(`?holderDid=${encodeURIComponent(bob.holderDid)}`);
    expect(byHolder.data.map((r) => r.credentialId)).toEqual([bob.credentialId]);
    const bySchema = await page('?schemaId=employee-v1');
    expect(bySchema.data.map((r) => r.credentialId)).toEqual([bob.credentialId]);
    expect((await page('?schemaId=membership-v1&total=true')).pagination.total).toBe(11);
    const byNonce = await page(`?revocationNonce=${shortLived.revocationNonce}`);
    expect(byNonce.data.map((r) => r.credentialId)).toEqual([shortLived.credentialId]);
    expect((await page('?revocationNonce=1')).data).toEqual([]);
    const bjj = await page('?proofType=BJJ_SIG_2021');
    expect(bjj.data.map((r) => r.proofType)).toEqual(['BJJ_SIG_2021']);
    expect((await page('?proofType=SD_JWT_VC&total=true')).pagination.total).toBe(11);
    const combined = await page(
      `?schemaId=membership-v1&holderDid=${encodeURIComponent(bob.holderDid)}&total=true`,
    );
    expect(combined.pagination.total).toBe(0);
  });

  it('filters by status: valid, revoked, suspended, upload_pending', async () => {
    const ids = async (status: string) =>
      (await page(`?limit=100&status=${status}`)).data.map((r) => r.credentialId).sort();
    expect(await ids('revoked')).toEqual([alice[0]!.credentialId]);
    expect(await ids('suspended')).toEqual([suspended.credentialId]);
    expect(await ids('upload_pending')).toEqual([pending.credentialId]);
    expect(await ids('expired')).toEqual([]);
    const valid = await ids('valid');
    expect(valid).toHaveLength(10);
    expect(valid).not.toContain(alice[0]!.credentialId);
    expect(valid).not.toContain(suspended.credentialId);
    const pendingRecord = (await page(`?status=upload_pending`)).data[0]!;
    expect(pendingRecord).toMatchObject({ status: 'valid', uploadState: 'pending', storagePath: null });
  });

  it('filters by status: expired (with the clock moved two days on)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 2 * 86400_000);
      const expired = await page('?status=expired');
      expect(expired.data.map((r) => r.credentialId)).toEqual([shortLived.credentialId]);
      expect(expired.data[0]!.status).toBe('expired');
      expect((await page('?limit=100&status=valid')).data.map((r) => r.credentialId)).not.toContain(
        shortLived.credentialId,
      );
    } finally {
      vi.useRealTimers();
    }
  });

  // `history --email`: direct issuances keep a keyed hash of the normalised address.
  it('filters by email: that address only, in any case and spacing; hosted issuances never match', async () => {
    const byEmail = async (email: string) =>
      (await page(`?limit=100&email=${encodeURIComponent(email)}`)).data.map((r) => r.credentialId);
    const aliceIds = alice.map((a) => a.credentialId).reverse();
    expect(await byEmail('alice.history@example.org')).toEqual(aliceIds);
    expect(await byEmail('  ALICE.History@Example.ORG ')).toEqual(aliceIds);
    expect(await byEmail('bob.history@example.org')).toEqual([bob.credentialId]);
    // Issued to a variant spelling of Bob's address: the same recipient, found by either spelling.
    const again = await issue(' Bob.History@EXAMPLE.org', 'employee-v1', { employer: 'Acme' });
    expect(again.holderDid).toBe(bob.holderDid);
    expect(await byEmail('bob.history@example.org')).toEqual([again.credentialId, bob.credentialId]);
    expect(
      (await page(`?email=bob.history%40example.org&schemaId=membership-v1&total=true`)).pagination.total,
    ).toBe(0);
    expect(await byEmail('nobody.history@example.org')).toEqual([]);
    // The hosted BJJ issuance (no email) is in no email's history.
    const everyone = [
      ...(await byEmail('alice.history@example.org')),
      ...(await byEmail('bob.history@example.org')),
      ...(await byEmail('carol.history@example.org')),
      ...(await byEmail('dave.history@example.org')),
      ...(await byEmail('erin.history@example.org')),
    ];
    expect(everyone).toHaveLength(12);
    expect(everyone).not.toContain(bjjCredentialId);
    // The database holds the keyed hash, never the address; hosted rows hold none.
    const store = issuer.ctx.store;
    const sql = 'SELECT credential_id, email_hash FROM issuances';
    const rows = (
      store.kind === 'sqlite' ? store.db.prepare(sql).all() : (await store.pool.query(sql)).rows
    ) as Array<{ credential_id: string; email_hash: string | null }>;
    const hashOf = new Map(rows.map((r) => [r.credential_id, r.email_hash]));
    expect(hashOf.get(bjjCredentialId)).toBeNull();
    expect(hashOf.get(bob.credentialId)).toBe(await issuer.ctx.hashEmail('bob.history@example.org'));
    expect(hashOf.get(again.credentialId)).toBe(hashOf.get(bob.credentialId));
    expect(JSON.stringify(rows)).not.toContain('example.org');
  });

  it.each([
    ['page=0', 'page'],
    ['page=abc', 'page'],
    ['page=-1', 'page'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=1.5', 'limit'],
    ['order=newest', 'order'],
    ['revocationNonce=abc', 'revocationNonce'],
    ['revocationNonce=99999999999999999', 'revocationNonce'],
    ['proofType=JWT', 'proofType'],
    ['status=active', 'status'],
    ['holderDid=', 'holderDid'],
    ['schemaId=a&schemaId=b', 'schemaId'],
    ['holderDID=did:x', 'holderDID'],
    ['email=not-an-address', 'email'],
    ['email=', 'email'],
    ['email=a@b.example&email=c@d.example', 'email'],
  ])('?%s → 400 naming %s', async (query, field) => {
    const res = await issuer.admin(`/admin/issuance-history?${query}`);
    await expectError(res, 400, 'INVALID_PARAMETER', field);
  });
});
