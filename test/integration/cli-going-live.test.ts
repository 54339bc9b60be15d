import { once } from 'node:events';
import { cpSync, mkdirSync, statSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { removeDir, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer, tempDir } from '../helpers/issuer.js';

const cli = runCli;

const subject = {
  givenName: 'Bo',
  familyName: 'Ek',
  memberSince: '2020-01-01',
  tier: 'basic',
  memberNumber: 3,
};
const issueBody = (i: number) => ({
  userId: `backup.${i}@example.org`,
  schemaId: 'membership-v1',
  vct: 'urn:vct:membership',
  expiration: new Date(Date.now() + 86400_000).toISOString(),
  credentialSubject: subject,
});

// docs/operations.md "Backup, restore, upgrade": its commands, run.
describe('backup and restore', () => {
  let issuer: TestIssuer;
  let restored: TestIssuer | undefined;
  const work = tempDir();
  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
    await restored?.close();
    removeDir(work);
  });

  it('a backup taken during issuance restores to a working server', async () => {
    const env = {
      ISSUER_URL: issuer.url,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      DATABASE_URL: `sqlite:${join(issuer.dir, 'issuer.db')}`,
    };
    // One issued before the backup starts: its sealed recipient (renewals) must travel with it.
    const first = await issuer.admin('/admin/issue-vc', issueBody(100));
    expect(first.status).toBe(201);
    const firstId = ((await first.json()) as { credentialId: string }).credentialId;
    const issuing = Array.from({ length: 20 }, (_, i) => issuer.admin('/admin/issue-vc', issueBody(i)));
    const backup = await cli(['backup', join(work, 'backup.db')], env, work);
    const answers = await Promise.all(issuing);
    expect(answers.every((r) => r.status === 201)).toBe(true);
    expect(backup.stderr).toBe('');
    expect(backup.code).toBe(0);
    expect(statSync(join(work, 'backup.db')).mode & 0o777).toBe(0o600);
    expect((await cli(['backup', join(work, 'backup.db')], env, work)).stderr).toMatch(/exists/);

    // Restore: the keys folder and the backup as the database of a new server.
    const restoreDir = join(work, 'restored');
    mkdirSync(restoreDir);
    cpSync(join(issuer.dir, 'keys'), join(restoreDir, 'keys'), { recursive: true });
    cpSync(join(work, 'backup.db'), join(restoreDir, 'issuer.db'));
    restored = await startIssuer({ dir: restoreDir, exampleClaimsFile: '' });
    const history = (await (await restored.admin('/admin/issuance-history?limit=100&total=true')).json()) as {
      pagination: { total: number };
    };
    expect(history.pagination.total).toBeLessThanOrEqual(21);
    expect((await restored.admin('/admin/issue-vc', issueBody(99))).status).toBe(201);
    // docs/operations.md "Renewal": the restored server renews a credential of the backup.
    const { userId } = (await restored.ctx.store.issuances.get(firstId))!;
    await restored.ctx.store.claims.upsertClaims([
      { userId, schemaId: 'membership-v1', claims: subject, expiresAt: null },
    ]);
    expect((await restored.admin('/admin/renew', { credentialId: firstId, reason: 'restored' })).status).toBe(
      201,
    );
  });

  it('refuses PostgreSQL, pointing at pg_dump', async () => {
    const out = await cli(['backup', join(work, 'x.db')], { DATABASE_URL: 'postgres://db/issuer' }, work);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('pg_dump');
  });
});

describe('admin CLI for going live', () => {
  let issuer: TestIssuer;
  const work = tempDir();
  beforeAll(async () => {
    issuer = await startIssuer({ env: { ADMIN_API_KEYS: 'ops:ops-key-0123456789abcdef0123456789abcd' } });
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(work);
  });

  it('audit prints who did what; --reason reaches the log', async () => {
    const env = { ISSUER_URL: issuer.url, ADMIN_API_KEYS: 'ops:ops-key-0123456789abcdef0123456789abcd' };
    expect((await cli(['publish-status-lists', '--reason', 'monthly'], env, work)).code).toBe(0);
    const out = await cli(['audit'], env, work);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/ops\s+status-list\.publish\s+\S+\s+monthly/);
    const asJson = JSON.parse((await cli(['--json', 'audit', '--actor', 'ops'], env, work)).stdout);
    expect(asJson.pagination.total).toBe(1);
  });

  it('an unreachable server is reported with the real cause', async () => {
    // A port that was free a moment ago: nothing listens there.
    const server = createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await new Promise((ok) => server.close(ok));
    const out = await cli(['history'], { ISSUER_URL: `http://127.0.0.1:${port}`, ADMIN_API_KEY: 'x' }, work);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('ECONNREFUSED');
    // ...and how to name another server.
    expect(out.stderr).toContain('--url');
    expect(out.stderr).toContain('ISSUER_URL');
  });

  it('the default server URL is the admin listener or localhost:$PORT, never ISSUER_ORIGIN', async () => {
    const viaOrigin = await cli(
      ['history'],
      { ISSUER_ORIGIN: issuer.url, PORT: '1', ADMIN_API_KEY: 'x' },
      work,
    );
    expect(viaOrigin.stderr).toContain('http://localhost:1');
  });
});
