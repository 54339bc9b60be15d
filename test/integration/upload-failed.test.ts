import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import type { IssuanceRecord } from '../../src/store/store.js';
import { runCli } from '../helpers/cli.js';
import { expectError } from '../helpers/errors.js';
import { startIssuer, TEST_ADMIN_API_KEY, type TestIssuer } from '../helpers/issuer.js';
import { capturingLogger } from '../helpers/log-capture.js';

const cli = (issuer: TestIssuer, args: string[]) =>
  runCli(args, { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY }, issuer.dir);

// An upload the hosting service refuses for good is not retried forever.
describe('upload failed state', () => {
  let issuer: TestIssuer;
  const attempts: string[] = [];
  const holder = generateHolderKeyPair();
  const capture = capturingLogger();
  const issue = (holderDID: string) =>
    issuer.post('/issue-vc', {
      holderDID,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
  const gaveUp = () => once(issuer.ctx.outbox, 'gave_up') as Promise<[IssuanceRecord, Error, number]>;
  const history = async (status: string) =>
    (
      (await (await issuer.admin(`/admin/issuance-history?status=${status}`)).json()) as {
        data: Array<{ credentialId: string; uploadState: string }>;
      }
    ).data;

  beforeAll(async () => {
    issuer = await startIssuer({ env: { UPLOAD_MAX_ATTEMPTS: '5' }, context: { log: capture.log } });
    issuer.ctx.outbox.on('failed', (r) => attempts.push(r.credentialId));
    issuer.ctx.outbox.on('gave_up', (r) => attempts.push(r.credentialId));
  });
  afterAll(async () => {
    await issuer.close();
  });

  it('a permanent 4xx gives up after 3 attempts into `failed`, listed by history', async () => {
    issuer.emulator!.faults.failNext('dstorage', 100, 400);
    const given = gaveUp();
    await expectError(await issue('did:example:refused'), 502, 'UPSTREAM_UNAVAILABLE');
    const [record, , count] = await given;
    expect(count).toBe(3);
    expect(attempts.filter((id) => id === record.credentialId)).toHaveLength(3);
    const stored = await issuer.ctx.store.issuances.get(record.credentialId);
    expect(stored).toMatchObject({ uploadState: 'failed', uploadAttempts: 3, nextAttemptAt: null });
    expect(stored!.lastError).toMatch(/400/);
    expect(await issuer.ctx.store.issuances.countFailedUploads()).toBe(1);
    // Observed: counted, gauged, logged once at error level with the retry command.
    const metrics = await (await fetch(`${issuer.url}/metrics`)).text();
    expect(metrics).toMatch(/^issuer_uploads_total\{outcome="gave_up"\} 1$/m);
    expect(metrics).toMatch(/^issuer_uploads_total\{outcome="retry"\} 2$/m);
    expect(metrics).toMatch(/^issuer_upload_outbox_failed 1$/m);
    const ready = (await (await fetch(`${issuer.url}/readyz`)).json()) as {
      checks: { outbox: { failed: number } };
    };
    expect(ready.checks.outbox.failed).toBe(1);
    const logged = capture.records().filter((l) => l.event === 'upload_gave_up');
    expect(logged).toEqual([
      expect.objectContaining({
        level: 'error',
        credentialId: record.credentialId,
        attempts: 3,
        retry: `npm run admin -- uploads retry ${record.credentialId}`,
      }),
    ]);
    expect(await issuer.ctx.store.issuances.nextUploadDue()).toBeUndefined();
    const failed = await history('upload_failed');
    expect(failed.map((r) => [r.credentialId, r.uploadState])).toEqual([[record.credentialId, 'failed']]);
    // A repeat of the same issue-vc finds the failed record and says so at once.
    await expectError(await issue('did:example:refused'), 502, 'UPSTREAM_UNAVAILABLE');

    // `uploads retry <credentialId>` puts it back; the hosting service now takes it.
    issuer.emulator!.faults.clear();
    const uploaded = once(issuer.ctx.outbox, 'uploaded');
    const retried = await cli(issuer, ['uploads', 'retry', record.credentialId]);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toContain(`${record.credentialId}: queued again`);
    await uploaded;
    expect(await issuer.ctx.store.issuances.get(record.credentialId)).toMatchObject({
      uploadState: 'uploaded',
    });
    expect(await history('upload_failed')).toEqual([]);
    // Not failed any more: nothing to retry, and the CLI says so with a non-zero exit.
    expect((await cli(issuer, ['uploads', 'retry', record.credentialId])).code).toBe(1);
  });

  it('a retryable failure (503) gives up after UPLOAD_MAX_ATTEMPTS; --all-failed resumes every one', async () => {
    issuer.emulator!.faults.failNext('dstorage', 1000, 503);
    const given = gaveUp();
    await expectError(await issue('did:example:unavailable'), 502, 'UPSTREAM_UNAVAILABLE');
    const [record, , count] = await given;
    expect(count).toBe(5);
    issuer.emulator!.faults.clear();
    const uploaded = once(issuer.ctx.outbox, 'uploaded');
    const all = await cli(issuer, ['--json', 'uploads', 'retry', '--all-failed']);
    expect(JSON.parse(all.stdout)).toEqual({ retried: [record.credentialId] });
    expect(all.stderr).toBe('');
    await uploaded;
  });

  it('POST /admin/uploads/retry validates its body', async () => {
    await expectError(await issuer.admin('/admin/uploads/retry', {}), 400, 'INVALID_PARAMETER');
    await expectError(
      await issuer.admin('/admin/uploads/retry', { credentialId: 'x', allFailed: true }),
      400,
      'INVALID_PARAMETER',
    );
    await expectError(
      await issuer.admin('/admin/uploads/retry', { allFailed: false }),
      400,
      'INVALID_PARAMETER',
    );
    const res = await issuer.admin('/admin/uploads/retry', { credentialId: 'no-such-credential' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ retried: [] });
    expect((await cli(issuer, ['uploads', 'retry'])).code).toBe(1);
  });
});
