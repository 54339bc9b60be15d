import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/errors.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

interface Page {
  data: Array<{ credentialId: string; status: string; schemaId: string; createdAt: string }>;
  pagination: { page?: number; limit: number; total?: number; nextCursor: string | null };
}
interface AuditPage {
  data: Array<{ action: string; target: string }>;
  pagination: { limit: number; total?: number; nextCursor: string | null };
}

const pg = await postgresAvailable('admin paging on PostgreSQL');

const member = {
  givenName: 'Ann',
  familyName: 'Page',
  memberSince: '2020-01-01',
  tier: 'gold',
  memberNumber: 9,
};

// docs/interface.md "Paging": cursors over HTTP on both engines.
describe.each([
  ['sqlite', true],
  ['postgres', pg],
] as const)('admin paging by cursor (%s)', (engine, available) => {
  let issuer: TestIssuer;
  let db: TempDatabase | undefined;
  let seeded: Array<{ credentialId: string; revocationNonce: string }> = [];

  const get = async <T>(path: string) => {
    const res = await issuer.admin(path);
    expect(res.status).toBe(200);
    return (await res.json()) as T;
  };
  const issue = async (n: number) => {
    const res = await issuer.admin('/admin/issue-vc', {
      userId: `paging-${n}@example.org`,
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership-v1',
      expiration: new Date(Date.now() + 86400_000).toISOString(),
      credentialSubject: member,
    });
    expect([201, 202]).toContain(res.status);
    return (await res.json()) as { credentialId: string; revocationNonce: string };
  };
  /** Every page of `query` by cursor; `between` runs after each page. */
  const walk = async (query: string, between?: () => Promise<unknown>) => {
    const ids: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const sep = query ? '&' : '';
      const next: Page = await get<Page>(
        `/admin/issuance-history?${query}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      // docs/interface.md "Paging": the first call is page 1, counted; pages by cursor are not.
      if (cursor) expect(next.pagination.total).toBeUndefined();
      else expect(next.pagination).toMatchObject({ page: 1, total: expect.any(Number) });
      ids.push(...next.data.map((r) => r.credentialId));
      cursor = next.pagination.nextCursor;
      pages++;
      if (cursor) await between?.();
    } while (cursor);
    return { ids, pages };
  };

  beforeAll(async () => {
    if (!available) return;
    db = engine === 'postgres' ? await createMigratedDatabase() : undefined;
    issuer = await startIssuer(db ? { env: { DATABASE_URL: db.url } } : {});
    seeded = [];
    for (let i = 0; i < 14; i++) seeded.push(await issue(i));
    for (const r of [seeded[2]!, seeded[7]!, seeded[11]!]) {
      expect((await issuer.admin('/admin/revoke', { revocationNonce: r.revocationNonce })).status).toBe(200);
    }
  });
  afterAll(async () => {
    await issuer?.close();
    await db?.drop();
  });

  it.skipIf(!available)('walks every row exactly once while issuances are recorded meanwhile', async () => {
    const before = (await get<Page>('/admin/issuance-history?limit=100')).data.map((r) => r.credentialId);
    expect(before).toHaveLength(seeded.length);
    let n = 100;
    // Newest first: what is recorded while walking sorts before the cursor and never shows up.
    const desc = await walk('limit=4', () => issue(n++));
    expect(desc.ids).toEqual(before);
    expect(desc.pages).toBe(4);
    // Oldest first: the new ones come last, each once; nothing recorded before is skipped or repeated.
    const inFlight: Array<Promise<unknown>> = [];
    const asc = await walk('limit=3&order=createdAt_asc', async () => {
      // Not awaited here: the next page is read while these are being recorded.
      inFlight.push(issue(n++), issue(n++));
    });
    await Promise.all(inFlight);
    expect(new Set(asc.ids).size).toBe(asc.ids.length);
    expect(asc.ids.slice(0, before.length)).toEqual([...before].reverse());
    const all = (await get<Page>('/admin/issuance-history?limit=100&order=createdAt_asc')).data.map(
      (r) => r.credentialId,
    );
    expect(all.slice(0, asc.ids.length)).toEqual(asc.ids);
  });

  it.skipIf(!available)(
    'filters combine with the cursor; page numbers still work, with a total',
    async () => {
      const revoked = await walk('status=revoked&limit=1');
      expect(revoked.ids).toEqual([seeded[11]!, seeded[7]!, seeded[2]!].map((r) => r.credentialId));
      const valid = await walk('status=valid&schemaId=membership-v1&limit=5&order=createdAt_asc');
      const everyValid = await get<Page>(
        '/admin/issuance-history?status=valid&limit=100&order=createdAt_asc',
      );
      expect(valid.ids).toEqual(everyValid.data.map((r) => r.credentialId));
      expect(valid.ids).not.toContain(seeded[7]!.credentialId);

      const numbered = await get<Page>('/admin/issuance-history?status=revoked&limit=2&page=2');
      expect(numbered.pagination).toEqual({ page: 2, limit: 2, total: 3, nextCursor: null });
      expect(numbered.data.map((r) => r.credentialId)).toEqual([seeded[2]!.credentialId]);
      const counted = await get<Page>('/admin/issuance-history?status=revoked&limit=2&total=true');
      expect(counted.pagination).toEqual({ page: 1, limit: 2, total: 3, nextCursor: expect.any(String) });
      // A page number's cursor continues after that page.
      const first = await get<Page>('/admin/issuance-history?status=revoked&limit=1&page=1&total=false');
      expect(first.pagination.total).toBeUndefined();
      const after = await get<Page>(
        `/admin/issuance-history?status=revoked&limit=1&cursor=${first.pagination.nextCursor}`,
      );
      expect(after.data.map((r) => r.credentialId)).toEqual([seeded[7]!.credentialId]);
    },
  );

  it.skipIf(!available)('the audit log pages by cursor too', async () => {
    const targets: string[] = [];
    let cursor: string | null = null;
    do {
      const page: AuditPage = await get<AuditPage>(
        `/admin/audit?action=revoke&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      targets.push(...page.data.map((e) => e.target));
      cursor = page.pagination.nextCursor;
    } while (cursor);
    expect(targets).toEqual([seeded[11]!, seeded[7]!, seeded[2]!].map((r) => r.revocationNonce));
  });

  it.skipIf(!available)('a cursor that is not one → 400 naming cursor', async () => {
    const first = await get<Page>('/admin/issuance-history?limit=1');
    const desc = first.pagination.nextCursor!;
    const audit = (await get<AuditPage>('/admin/audit?limit=1')).pagination.nextCursor!;
    for (const query of [
      'cursor=not-a-cursor',
      'cursor=%2B%2B%2B',
      `cursor=${desc}!`,
      `cursor=${desc.slice(0, -1)}`,
      `cursor=${Buffer.from('h.d.abc.1').toString('base64url')}`,
      `cursor=${Buffer.from('h.d.1.0').toString('base64url')}`,
      `cursor=${'a'.repeat(201)}`,
      `cursor=${audit}`,
      `cursor=${desc}&order=createdAt_asc`,
      `cursor=${desc}&page=2`,
      'cursor=',
    ]) {
      await expectError(
        await issuer.admin(`/admin/issuance-history?${query}`),
        400,
        'INVALID_PARAMETER',
        'cursor',
      );
    }
    for (const query of ['cursor=x', `cursor=${desc}`, `cursor=${audit}&page=1`]) {
      await expectError(await issuer.admin(`/admin/audit?${query}`), 400, 'INVALID_PARAMETER', 'cursor');
    }
    await expectError(await issuer.admin('/admin/audit?total=yes'), 400, 'INVALID_PARAMETER', 'total');
  });
});
