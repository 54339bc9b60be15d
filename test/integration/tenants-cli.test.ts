import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startTenants, TEST_OPERATOR_KEY, type TestTenants } from '../helpers/tenants.js';

// docs/several-issuers.md "Adding a tenant" and docs/admin-cli.md (every command takes --json): the
// keys `tenants add` generates are shown once, so --json carries them too; the registry keeps only
// their digests.
describe('npm run admin -- --json tenants add', () => {
  let d: TestTenants;

  beforeAll(async () => {
    d = await startTenants(0);
  });
  afterAll(async () => {
    await d?.close();
  });

  it('prints the generated keys in its JSON, and they open the new tenant', async () => {
    const added = await runCli(
      [
        '--url',
        d.url,
        '--json',
        'tenants',
        'add',
        'jsonic',
        '--origin',
        'https://jsonic.issuers.test',
        '--partner-id',
        randomUUID(),
        // Never called: nothing is issued here.
        '--service-url',
        'http://127.0.0.1:9/v1',
      ],
      { OPERATOR_API_KEY: TEST_OPERATOR_KEY },
      process.cwd(),
    );
    expect(added.code).toBe(0);
    const out = JSON.parse(added.stdout) as {
      tenant: { id: string; serving: boolean };
      apiKey: string;
      adminApiKeys: { admin: string };
    };
    expect(out.tenant).toMatchObject({ id: 'jsonic', serving: true });
    const history = await d.fetch('jsonic.issuers.test', '/admin/issuance-history', {
      headers: { 'x-admin-api-key': out.adminApiKeys.admin },
    });
    expect(history.status).toBe(200);
    // The x-api-key passes the key check (an empty body is then refused); another key does not.
    const holder = (key: string) =>
      d.fetch('jsonic.issuers.test', '/available-vc', {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: '{}',
      });
    expect((await holder(out.apiKey)).status).toBe(400);
    expect((await holder(`${out.apiKey}x`)).status).toBe(403);
  });
});
