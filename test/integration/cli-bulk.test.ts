import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import {
  queryStore,
  removeDir,
  startIssuer,
  TEST_ADMIN_API_KEY,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';

const HEADER =
  'email,expiration,credentialSubject.givenName,credentialSubject.familyName,credentialSubject.memberSince,credentialSubject.tier,credentialSubject.memberNumber';
const row = (email: string, n: number) => `${email},2099-01-01T00:00:00Z,Gi,Fa,2020-01-01,gold,${n}`;

// docs/admin-cli.md "Bulk status changes": `status bulk` over a batch-issue run's id, and `status job`.
describe('admin CLI: status bulk', () => {
  let issuer: TestIssuer;
  const work = tempDir();

  beforeAll(async () => {
    issuer = await startIssuer({ dir: join(work, 'issuer') });
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(work);
  });

  const cli = (args: string[]) =>
    runCli(
      args,
      { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY, KEYS_DIR: join(work, 'cli-keys') },
      work,
    );

  it('revokes a whole batch-issue run by the batch id it printed and recorded', async () => {
    const file = join(work, 'batch.csv');
    writeFileSync(
      file,
      [
        HEADER,
        row('bulk.one@example.org', 1),
        row('bulk.two@example.org', 2),
        row('bulk.three@example.org', 3),
      ].join('\n'),
    );
    const batch = await cli([
      '--json',
      'batch-issue',
      file,
      '--schema',
      'membership-v1',
      '--vct',
      'urn:vct:bulk',
    ]);
    expect(batch.code).toBe(0);
    const { batchId, issued } = JSON.parse(batch.stdout) as { batchId: string; issued: number };
    expect(batchId).toMatch(/^batch-[0-9a-f]{24}$/);
    expect(issued).toBe(3);
    const recorded = await queryStore<{ n: number }>(
      issuer.ctx.store,
      'SELECT COUNT(*) AS n FROM issuances WHERE batch_id = ?',
      [batchId],
    );
    expect(Number(recorded[0]!.n)).toBe(3);

    const dry = await cli([
      '--json',
      'status',
      'bulk',
      'revoke',
      '--batch',
      batchId,
      '--reason',
      'wrong list',
      '--dry-run',
    ]);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual({ dryRun: true, count: 3 });

    // No terminal and no --yes: nothing is started.
    const unconfirmed = await cli(['status', 'bulk', 'revoke', '--batch', batchId, '--reason', 'wrong list']);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toMatch(/--yes/);
    expect(
      Number(
        (await queryStore<{ n: number }>(issuer.ctx.store, 'SELECT COUNT(*) AS n FROM status_jobs'))[0]!.n,
      ),
    ).toBe(0);

    const run = await cli([
      '--json',
      'status',
      'bulk',
      'revoke',
      '--batch',
      batchId,
      '--reason',
      'wrong list',
      '--yes',
    ]);
    expect(run.code).toBe(0);
    const job = JSON.parse(run.stdout) as {
      jobId: string;
      state: string;
      total: number;
      done: number;
      failed: number;
    };
    expect(job).toMatchObject({ state: 'done', total: 3, done: 3, failed: 0 });
    const statuses = await queryStore<{ status: number }>(
      issuer.ctx.store,
      'SELECT status FROM issuances WHERE batch_id = ?',
      [batchId],
    );
    expect(statuses.map((s) => Number(s.status))).toEqual([1, 1, 1]);

    const shown = await cli(['status', 'job', job.jobId]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`job ${job.jobId}: done; 3 of 3 done, 0 failed`);
  });

  it('names the flag at fault and refuses an empty selector', async () => {
    const bad = await cli([
      'status',
      'bulk',
      'revoke',
      '--issued-after',
      'last week',
      '--reason',
      'x',
      '--yes',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--issued-after/);
    const empty = await cli(['status', 'bulk', 'revoke', '--reason', 'x', '--yes']);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/selector/);
    const noReason = await cli(['status', 'bulk', 'revoke', '--schema', 'membership-v1']);
    expect(noReason.code).not.toBe(0);
    expect(noReason.stderr).toMatch(/--reason/);
    const change = await cli(['status', 'bulk', 'delete', '--schema', 'membership-v1', '--reason', 'x']);
    expect(change.code).toBe(1);
    // The single-credential read is unchanged beside the subcommands.
    const status = await cli(['status', '12345']);
    expect(status.stderr + status.stdout).toMatch(/12345|NOT_FOUND/);
  });
});
