import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { seedIssuances } from '../fixtures/bulk.js';
import { fetchList } from '../fixtures/status.js';
import { expectError } from '../helpers/errors.js';
import {
  queryStore,
  removeDir,
  startIssuer,
  TEST_ADMIN_API_KEY,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';

interface Job {
  jobId: string;
  state: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  failed: number;
}

async function waitForJob(issuer: TestIssuer, jobId: string): Promise<Job> {
  let job: Job | undefined;
  await expect
    .poll(
      async () => {
        job = (await (await issuer.admin(`/admin/status-changes/${jobId}`)).json()) as Job;
        return job.state;
      },
      { timeout: 120_000, interval: 50 },
    )
    .not.toBe('running');
  return job!;
}

async function start(issuer: TestIssuer, body: unknown): Promise<{ jobId: string; count: number }> {
  const res = await issuer.admin('/admin/status-changes', body);
  expect(res.status).toBe(202);
  return (await res.json()) as { jobId: string; count: number };
}

const statusOf = async (issuer: TestIssuer, ids: string[]) =>
  queryStore<{
    credential_id: string;
    revocation_nonce: number;
    status: number;
    status_partition: number;
    status_index: number;
  }>(
    issuer.ctx.store,
    `SELECT credential_id, revocation_nonce, status, status_partition, status_index FROM issuances
     WHERE credential_id IN (${ids.map(() => '?').join(',')})`,
    ids,
  );

// docs/operations.md "Bulk status changes": POST /admin/status-changes and its job, on the engine
// TEST_STORE names.
describe('bulk status changes', () => {
  let issuer: TestIssuer;
  const dir = tempDir();
  const seed = (
    count: number,
    options: Parameters<typeof seedIssuances>[2] extends infer O ? Partial<O> : never,
  ) => seedIssuances(issuer.ctx.store, count, { partitionSize: 1024, bits: 2, ...options });

  beforeAll(async () => {
    issuer = await startIssuer({
      dir,
      env: { STATUS_LIST_BITS: '2', STATUS_LIST_PARTITION_SIZE: '1024' },
      context: { statusJobs: { chunkSize: 37, sweepMs: 50 } },
    });
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(dir);
  });

  it('refuses bad input with a 400 naming the field', async () => {
    const ok = { change: 'revoke', selector: { schemaId: 'membership-v1' }, reason: 'test' };
    const cases: Array<[unknown, string]> = [
      [{ ...ok, extra: 1 }, 'extra'],
      [{ ...ok, selector: { schemaId: 'x', nope: 1 } }, 'selector.nope'],
      [{ ...ok, selector: {} }, 'selector'],
      [{ ...ok, selector: { issuedAfter: 'yesterday' } }, 'selector.issuedAfter'],
      [{ ...ok, selector: { issuedBefore: '2026-01-01' } }, 'selector.issuedBefore'],
      [
        { ...ok, selector: { issuedAfter: '2026-02-01T00:00:00Z', issuedBefore: '2026-01-01T00:00:00Z' } },
        'selector.issuedBefore',
      ],
      [
        { ...ok, selector: { credentialIds: Array.from({ length: 10_001 }, (_, i) => `id-${i}`) } },
        'selector.credentialIds',
      ],
      [{ ...ok, selector: { credentialIds: [] } }, 'selector.credentialIds'],
      [{ change: 'revoke', selector: { schemaId: 'x' } }, 'reason'],
      [{ ...ok, reason: '  ' }, 'reason'],
      [{ ...ok, change: 'delete' }, 'change'],
      [{ ...ok, dryRun: 'yes' }, 'dryRun'],
      [{ ...ok, selector: { holderDid: 'not a did' } }, 'selector.holderDid'],
    ];
    for (const [body, field] of cases)
      await expectError(await issuer.admin('/admin/status-changes', body), 400, 'INVALID_PARAMETER', field);
    await expectError(await issuer.admin('/admin/status-changes/sj_nope'), 400, 'INVALID_PARAMETER', 'jobId');
    const unknown = await issuer.admin('/admin/status-changes/sj_00000000-0000-0000-0000-000000000000');
    await expectError(unknown, 404, 'NOT_FOUND');
  });

  it('revokes what the selector matches, once each, audited with the job, and publishes at the end', async () => {
    const batch = await seed(200, { batchId: 'batch-a', kid: 'kid-a' });
    const other = await seed(30, { batchId: 'batch-b', kid: 'kid-a' });
    // Already revoked: counts as done, changes nothing, is not audited again.
    const [first] = await statusOf(issuer, [batch[0]!]);
    await issuer.ctx.status.change(first!.revocation_nonce, 'revoke');
    const hook = await issuer.admin('/admin/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['*'] });
    expect(hook.status).toBe(201);

    const selector = { batchId: 'batch-a', kid: 'kid-a' };
    const dry = await issuer.admin('/admin/status-changes', {
      change: 'revoke',
      selector,
      reason: 'wrong list',
      dryRun: true,
    });
    expect(dry.status).toBe(200);
    expect(await dry.json()).toEqual({ count: 200 });
    // The dry run changed nothing.
    expect((await statusOf(issuer, batch)).filter((r) => r.status === 1)).toHaveLength(1);

    // Each chunk written is told (a tenant's webhook look listens): 199 changes in chunks of 37.
    let chunks = 0;
    const counted = () => void chunks++;
    issuer.ctx.statusJobs.on('changed', counted);
    const { jobId, count } = await start(issuer, { change: 'revoke', selector, reason: 'wrong list' });
    expect(jobId).toMatch(/^sj_/);
    expect(count).toBe(200);
    const job = await waitForJob(issuer, jobId);
    expect(job).toMatchObject({ state: 'done', total: 200, done: 200, failed: 0 });
    issuer.ctx.statusJobs.off('changed', counted);
    expect(chunks).toBeGreaterThanOrEqual(Math.ceil(200 / 37));

    const after = await statusOf(issuer, batch);
    expect(after.every((r) => r.status === 1)).toBe(true);
    expect((await statusOf(issuer, other)).every((r) => r.status === 0)).toBe(true);

    const audit = await queryStore<{ target: string; n: number; actor: string; reason: string }>(
      issuer.ctx.store,
      `SELECT target, COUNT(*) AS n, MIN(actor) AS actor, MIN(reason) AS reason FROM audit_log
       WHERE job_id = ? AND action = 'revoke' GROUP BY target`,
      [jobId],
    );
    expect(audit).toHaveLength(199);
    expect(audit.every((a) => Number(a.n) === 1 && a.actor === 'admin' && a.reason === 'wrong list')).toBe(
      true,
    );
    expect(audit.map((a) => a.target)).not.toContain(String(first!.revocation_nonce));

    const events = await queryStore<{ data: string }>(
      issuer.ctx.store,
      `SELECT data FROM webhook_events WHERE type = 'credential.revoked'`,
    );
    const jobEvents = events.map((e) => JSON.parse(e.data) as { jobId?: string; credentialId: string });
    expect(jobEvents.filter((e) => e.jobId === jobId)).toHaveLength(199);

    // The lists and /revocation-status agree with the records.
    const partitions = [...new Set(after.map((r) => r.status_partition))];
    for (const partition of partitions) {
      const { list } = await fetchList(`${issuer.url}/statuslist/${partition}`);
      for (const r of after.filter((a) => a.status_partition === partition))
        expect(list.getStatus(r.status_index)).toBe(1);
    }
    for (const r of after.slice(0, 20)) {
      const status = (await (
        await fetch(`${issuer.url}/revocation-status/${r.revocation_nonce}`)
      ).json()) as {
        isRevoked: boolean;
      };
      expect(status.isRevoked).toBe(true);
    }
    // Each touched partition published once, by the job, at the end.
    const publishedEvents = await queryStore<{ data: string }>(
      issuer.ctx.store,
      `SELECT data FROM webhook_events WHERE type = 'status_list.published'`,
    );
    const byPartition = new Map<number, number>();
    for (const e of publishedEvents) {
      const p = (JSON.parse(e.data) as { partition: number }).partition;
      byPartition.set(p, (byPartition.get(p) ?? 0) + 1);
    }
    for (const partition of partitions) expect(byPartition.get(partition)).toBe(1);

    const jobAudit = await queryStore<{ n: number }>(
      issuer.ctx.store,
      `SELECT COUNT(*) AS n FROM audit_log WHERE job_id = ? AND action = 'status-change.job'`,
      [jobId],
    );
    expect(Number(jobAudit[0]!.n)).toBe(1);
    const { id } = (await hook.json()) as { id: string };
    await fetch(`${issuer.url}/admin/webhooks/${id}`, {
      method: 'DELETE',
      headers: { 'x-admin-api-key': TEST_ADMIN_API_KEY },
    });
  });

  it('suspends and unsuspends; a revoked credential fails to suspend, one already suspended is done', async () => {
    const ids = await seed(50, { schemaId: 'suspend-me' });
    const [revoked, suspended] = await statusOf(issuer, ids.slice(0, 2));
    await issuer.ctx.status.change(revoked!.revocation_nonce, 'revoke');
    await issuer.ctx.status.change(suspended!.revocation_nonce, 'suspend');
    const s = await start(issuer, {
      change: 'suspend',
      selector: { schemaId: 'suspend-me' },
      reason: 'audit',
    });
    expect(await waitForJob(issuer, s.jobId)).toMatchObject({
      state: 'done',
      total: 50,
      done: 49,
      failed: 1,
    });
    expect((await statusOf(issuer, ids)).filter((r) => r.status === 2)).toHaveLength(49);
    const u = await start(issuer, {
      change: 'unsuspend',
      selector: { schemaId: 'suspend-me', credentialIds: ids.slice(0, 10) },
      reason: 'cleared',
    });
    expect(await waitForJob(issuer, u.jobId)).toMatchObject({ state: 'done', total: 10, done: 9, failed: 1 });
    expect((await statusOf(issuer, ids)).filter((r) => r.status === 2)).toHaveLength(40);
  });

  it('selects by date and by email, intersected', async () => {
    const old = await seed(20, { schemaId: 'dated', createdAt: new Date('2026-01-10T00:00:00Z') });
    await seed(20, { schemaId: 'dated', createdAt: new Date('2026-03-10T00:00:00Z') });
    const dry = async (selector: unknown) =>
      (
        (await (
          await issuer.admin('/admin/status-changes', {
            change: 'revoke',
            selector,
            reason: 'x',
            dryRun: true,
          })
        ).json()) as {
          count: number;
        }
      ).count;
    expect(await dry({ schemaId: 'dated' })).toBe(40);
    expect(await dry({ schemaId: 'dated', issuedBefore: '2026-02-01T00:00:00Z' })).toBe(20);
    expect(await dry({ schemaId: 'dated', issuedAfter: '2026-02-01T00:00:00+01:00' })).toBe(20);
    expect(await dry({ schemaId: 'dated', credentialIds: old.slice(0, 3) })).toBe(3);
    expect(await dry({ schemaId: 'other', credentialIds: old.slice(0, 3) })).toBe(0);
    expect(await dry({ email: 'nobody@example.com' })).toBe(0);
  });

  it('revokes Iden3 credentials with one new state for the whole job', async () => {
    const holder = generateHolderKeyPair();
    const issued: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await issuer.post('/issue-vc', {
        holderDID: `did:example:bulk-bjj-${i}`,
        pubKey: holder.publicKeyHex,
        userId: 'demo-user-1',
        schemaId: 'membership-v1',
        proofType: 'BJJ_SIG_2021',
      });
      expect(res.status).toBe(201);
    }
    const rows = await queryStore<{ credential_id: string; revocation_nonce: number }>(
      issuer.ctx.store,
      `SELECT credential_id, revocation_nonce FROM issuances WHERE proof_type = 'BJJ_SIG_2021' AND holder_did LIKE 'did:example:bulk-bjj-%'`,
    );
    issued.push(...rows.map((r) => r.credential_id));
    expect(issued).toHaveLength(3);
    const states = async () =>
      Number(
        (await queryStore<{ n: number }>(issuer.ctx.store, 'SELECT COUNT(*) AS n FROM iden3_states'))[0]!.n,
      );
    const before = await states();
    const { jobId } = await start(issuer, {
      change: 'revoke',
      selector: { credentialIds: issued },
      reason: 'bjj',
    });
    expect(await waitForJob(issuer, jobId)).toMatchObject({ state: 'done', total: 3, done: 3, failed: 0 });
    expect(await states()).toBe(before + 1);
    for (const r of rows) {
      const status = (await (
        await fetch(`${issuer.url}/credential-status/${r.revocation_nonce}`)
      ).json()) as {
        mtp: { existence: boolean };
      };
      expect(status.mtp.existence).toBe(true);
    }
    const audit = await queryStore<{ n: number }>(
      issuer.ctx.store,
      `SELECT COUNT(*) AS n FROM audit_log WHERE job_id = ? AND action = 'revoke'`,
      [jobId],
    );
    expect(Number(audit[0]!.n)).toBe(3);
  });
});
