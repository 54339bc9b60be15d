import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { removeDir, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer, tempDir } from '../helpers/issuer.js';

// The sample files under examples/, used as docs/admin-cli.md says, against a fresh server.
describe('examples/', () => {
  let issuer: TestIssuer;
  const work = tempDir();
  const cli = (args: string[]) =>
    runCli(args, { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY }, work);

  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(work);
  });

  it('claims import examples/claims-import.csv fills the claims source', async () => {
    const run = await cli(['--json', 'claims', 'import', join(process.cwd(), 'examples/claims-import.csv')]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ ok: true, upserted: 3 });
    const stored = await issuer.ctx.store.claims.getClaims('sample-user-1', 'membership-v1');
    expect(stored?.claims).toMatchObject({ givenName: 'Chloé', tier: 'platinum', memberNumber: 3107 });
    expect(stored?.expiresAt?.toISOString()).toBe('2030-12-31T00:00:00.000Z');
  });

  it('batch-issue examples/batch-issue.csv issues one credential per row', async () => {
    // A copy: batch-issue writes its result file beside the input.
    const file = join(work, 'batch-issue.csv');
    copyFileSync('examples/batch-issue.csv', file);
    const run = await cli(['batch-issue', file]);
    expect(run.code).toBe(0);
    for (const email of ['chloe.dubois@example.com', 'daan.jansen@example.com']) {
      const history = await cli(['--json', 'history', '--email', email]);
      expect(JSON.parse(history.stdout).pagination.total, email).toBe(1);
    }
  });

  it('batch-issue examples/batch-issue-users.csv issues the claims provider’s claims per user', async () => {
    const file = join(work, 'batch-issue-users.csv');
    copyFileSync('examples/batch-issue-users.csv', file);
    const run = await cli(['--json', 'batch-issue', file, '--schema', 'membership-v1']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ total: 2, issued: 2, failed: 0 });
    for (const email of ['alice.martin@example.com', 'bram.devries@example.com']) {
      const history = await cli(['--json', 'history', '--email', email]);
      expect(JSON.parse(history.stdout).pagination.total, email).toBe(1);
    }
  });
});
