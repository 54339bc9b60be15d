import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedIssuances } from '../fixtures/bulk.js';
import { expectError } from '../helpers/errors.js';
import { queryStore, startIssuer, type TestIssuer } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

interface Pagination {
  page?: number;
  limit: number;
  total?: number;
  nextCursor: string | null;
}
interface HistoryPage {
  data: Array<{ credentialId: string; status: string }>;
  pagination: Pagination;
}
interface AuditPage {
  data: Array<{ action: string; target: string; reason?: string; jobId?: string }>;
  pagination: Pagination;
}
interface Job {
  jobId: string;
  state: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  failed: number;
}

const pg = await postgresAvailable('admin contracts on PostgreSQL');

const PARTITION_SIZE = 16_384;

/**
 * What scripts written against the first releases rely on (docs/interface.md "Paging",
 * docs/admin-cli.md "Audit log" and "Bulk status changes"), over HTTP on both engines.
 */
describe.each([
  ['sqlite', true],
  ['postgres', pg],
] as const)('admin contracts (%s)', (engine, available) => {
  let issuer: TestIssuer;
  let db: TempDatabase | undefined;

  const get = async <T>(path: string) => {
    const res = await issuer.admin(path);
    expect(res.status).toBe(200);
    return (await res.json()) as T;
  };
  const seed = (count: number, schemaId: string) =>
    seedIssuances(issuer.ctx.store, count, { partitionSize: PARTITION_SIZE, bits: 2, schemaId });
  const waitForJob = async (jobId: string): Promise<Job> => {
    let job: Job | undefined;
    await expect
      .poll(async () => {
        job = await get<Job>(`/admin/status-changes/${jobId}`);
        return job.state;
      })
      .not.toBe('running');
    return job!;
  };
  const revokedOf = async (ids: string[]) =>
    (
      await queryStore<{ n: number | string }>(
        issuer.ctx.store,
        `SELECT COUNT(*) AS n FROM issuances WHERE status = 1 AND credential_id IN (${ids.map(() => '?').join(',')})`,
        ids,
      )
    )[0]!.n;
  const jobsRecorded = async () =>
    Number(
      (
        await queryStore<{ n: number | string }>(issuer.ctx.store, 'SELECT COUNT(*) AS n FROM status_jobs')
      )[0]!.n,
    );

  beforeAll(async () => {
    if (!available) return;
    db = engine === 'postgres' ? await createMigratedDatabase() : undefined;
    issuer = await startIssuer({
      env: {
        STATUS_LIST_BITS: '2',
        STATUS_LIST_PARTITION_SIZE: String(PARTITION_SIZE),
        ...(db ? { DATABASE_URL: db.url } : {}),
      },
      context: { statusJobs: { chunkSize: 500, sweepMs: 50 } },
    });
  });
  afterAll(async () => {
    await issuer?.close();
    await db?.drop();
  });

  it.skipIf(!available)(
    'a script that reads `total` and pages with `page` after a first call without it sees every record once',
    async () => {
      const ids = await seed(11, 'paged-v1');
      // The first call names neither page nor cursor: page 1, counted, with a cursor beside.
      const first = await get<HistoryPage>('/admin/issuance-history?schemaId=paged-v1&limit=4');
      expect(first.pagination).toEqual({ page: 1, limit: 4, total: 11, nextCursor: expect.any(String) });
      const seen = first.data.map((r) => r.credentialId);
      // As scripts of the first release did: page on until `total` is read.
      const { total, limit } = first.pagination;
      for (let page = 2; (page - 1) * limit < total!; page++) {
        const next = await get<HistoryPage>(`/admin/issuance-history?schemaId=paged-v1&limit=4&page=${page}`);
        expect(next.pagination).toMatchObject({ page, limit: 4, total: 11 });
        seen.push(...next.data.map((r) => r.credentialId));
      }
      expect(seen).toHaveLength(11);
      expect(new Set(seen)).toEqual(new Set(ids));

      // The cursor of page 1 continues where page 2 starts; `total=false` skips the count.
      const byCursor = await get<HistoryPage>(
        `/admin/issuance-history?schemaId=paged-v1&limit=4&cursor=${encodeURIComponent(first.pagination.nextCursor!)}`,
      );
      expect(byCursor.data.map((r) => r.credentialId)).toEqual(seen.slice(4, 8));
      expect(byCursor.pagination).toEqual({ limit: 4, nextCursor: expect.any(String) });
      const uncounted = await get<HistoryPage>(
        '/admin/issuance-history?schemaId=paged-v1&limit=4&total=false',
      );
      expect(uncounted.pagination).toEqual({ page: 1, limit: 4, nextCursor: first.pagination.nextCursor });
      expect(uncounted.data).toEqual(first.data);
      // With a filter the index cannot answer alone, page 1 is still the first `limit` matches.
      const valid = await get<HistoryPage>(
        '/admin/issuance-history?schemaId=paged-v1&status=valid&limit=100',
      );
      expect(valid.pagination).toEqual({ page: 1, limit: 100, total: 11, nextCursor: null });
    },
  );

  it.skipIf(!available)(
    'the audit log: page 1 with a total without page, and the jobId of what a bulk job changed',
    async () => {
      const ids = await seed(5, 'audited-v1');
      const before = await get<AuditPage>('/admin/audit?action=revoke&limit=2');
      expect(before.pagination).toEqual({ page: 1, limit: 2, total: 0, nextCursor: null });

      const started = await issuer.admin('/admin/status-changes', {
        change: 'revoke',
        selector: { credentialIds: ids },
        reason: 'sent to the wrong list',
        expectedCount: 5,
      });
      expect(started.status).toBe(202);
      const { jobId } = (await started.json()) as { jobId: string };
      expect(await waitForJob(jobId)).toMatchObject({ state: 'done', total: 5, done: 5, failed: 0 });

      const first = await get<AuditPage>('/admin/audit?action=revoke&limit=2');
      expect(first.pagination).toEqual({ page: 1, limit: 2, total: 5, nextCursor: expect.any(String) });
      const entries = [...first.data];
      for (let page = 2; (page - 1) * 2 < first.pagination.total!; page++)
        entries.push(...(await get<AuditPage>(`/admin/audit?action=revoke&limit=2&page=${page}`)).data);
      expect(entries).toHaveLength(5);
      for (const e of entries) expect(e).toMatchObject({ reason: 'sent to the wrong list', jobId });
      const recorded = await get<AuditPage>('/admin/audit?action=status-change.job');
      expect(recorded.data[0]).toMatchObject({ target: 'revoke 5', jobId });
      // A change made by hand carries no jobId.
      const [one] = await seed(1, 'audited-v1');
      const nonce = (
        await get<{ data: Array<{ credentialId: string; revocationNonce: string }> }>(
          '/admin/issuance-history?schemaId=audited-v1&status=valid',
        )
      ).data.find((r) => r.credentialId === one)!.revocationNonce;
      expect((await issuer.admin('/admin/revoke', { revocationNonce: nonce })).status).toBe(200);
      const byHand = (await get<AuditPage>('/admin/audit?action=revoke&limit=1')).data[0]!;
      expect(byHand.target).toBe(nonce);
      expect(byHand).not.toHaveProperty('jobId');
    },
  );

  it.skipIf(!available)(
    'a selector of 10,000 credential ids (the documented maximum) is taken; one more is a 400 naming credentialIds',
    async () => {
      // 1,000 recorded credentials among 10,000 ids (seeding all of them adds nothing but time).
      const recorded = await seed(1000, 'many-v1');
      const ids = [...recorded, ...Array.from({ length: 9000 }, (_, i) => `unknown-${i}`)];
      const body = { change: 'revoke', selector: { credentialIds: ids }, reason: 'test', dryRun: true };
      const res = await issuer.admin('/admin/status-changes', body);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ count: 1000 });
      // Ids of the longest allowed length, 10,000 of them, fit the route's body limit too.
      const longest = Array.from({ length: 10_000 }, (_, i) => `${i}-`.padEnd(255, 'x'));
      const long = await issuer.admin('/admin/status-changes', {
        ...body,
        selector: { credentialIds: longest },
      });
      expect(long.status).toBe(200);
      expect(await long.json()).toEqual({ count: 0 });
      await expectError(
        await issuer.admin('/admin/status-changes', {
          ...body,
          selector: { credentialIds: [...ids, 'one-more'] },
        }),
        400,
        'INVALID_PARAMETER',
        'selector.credentialIds',
      );
    },
  );

  it.skipIf(!available)(
    'expectedCount: a selection that now matches another number is a 409 with both numbers, and nothing changes',
    async () => {
      const ids = await seed(3, 'expected-v1');
      const selector = { schemaId: 'expected-v1' };
      const dry = await issuer.admin('/admin/status-changes', {
        change: 'suspend',
        selector,
        reason: 'audit',
        dryRun: true,
      });
      expect(await dry.json()).toEqual({ count: 3 });
      // Another credential matches since the operator counted.
      ids.push(...(await seed(1, 'expected-v1')));
      const jobs = await jobsRecorded();
      const audits = (await get<AuditPage>('/admin/audit?limit=1')).pagination.total;
      for (const dryRun of [false, true]) {
        const refused = await expectError<{ field: string; expectedCount: number; count: number }>(
          await issuer.admin('/admin/status-changes', {
            change: 'suspend',
            selector,
            reason: 'audit',
            expectedCount: 3,
            dryRun,
          }),
          409,
          'CONFLICT',
          'expectedCount',
        );
        expect(refused.details).toMatchObject({ expectedCount: 3, count: 4 });
      }
      // No job, no audit row, no credential changed.
      expect(await jobsRecorded()).toBe(jobs);
      expect((await get<AuditPage>('/admin/audit?limit=1')).pagination.total).toBe(audits);
      const statuses = await queryStore<{ status: number }>(
        issuer.ctx.store,
        `SELECT status FROM issuances WHERE credential_id IN (${ids.map(() => '?').join(',')})`,
        ids,
      );
      expect(statuses.map((r) => Number(r.status))).toEqual([0, 0, 0, 0]);

      const started = await issuer.admin('/admin/status-changes', {
        change: 'revoke',
        selector,
        reason: 'audit',
        expectedCount: 4,
      });
      expect(started.status).toBe(202);
      const { jobId, count } = (await started.json()) as { jobId: string; count: number };
      expect(count).toBe(4);
      expect(await waitForJob(jobId)).toMatchObject({ state: 'done', done: 4 });
      expect(Number(await revokedOf(ids))).toBe(4);
      for (const bad of [-1, 1.5, '3'])
        await expectError(
          await issuer.admin('/admin/status-changes', {
            change: 'revoke',
            selector,
            reason: 'x',
            expectedCount: bad,
          }),
          400,
          'INVALID_PARAMETER',
          'expectedCount',
        );
    },
  );
});
