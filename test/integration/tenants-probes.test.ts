import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTenants, type TestTenants } from '../helpers/tenants.js';

// docs/security.md "Tenants kept apart": a host that is no tenant's does not tell which tenants
// exist; its readiness probe says how many are served and how many fail, and the operator routes
// say which.
describe("the deployment's readiness probe", () => {
  let d: TestTenants;

  beforeAll(async () => {
    d = await startTenants(1);
  });
  afterAll(async () => {
    await d?.close();
  });

  it('counts the tenants failing to start without naming them; the operator sees which', async () => {
    const added = await d.operator('POST', '/operator/tenants', {
      id: 'broken-acme',
      origin: 'https://broken-acme.issuers.test',
      settings: { partnerId: randomUUID(), schemasDir: `/nonexistent-${randomBytes(4).toString('hex')}` },
      apiKey: 'k1',
      adminApiKeys: { admin: 'k2' },
    });
    expect(added.status).toBe(201);
    expect(((await added.json()) as { tenant: { serving: boolean } }).tenant.serving).toBe(false);

    const ready = await d.fetch('nobody.issuers.test', '/readyz');
    expect(ready.status).toBe(200);
    const text = await ready.text();
    expect(JSON.parse(text)).toEqual({
      status: 'ready',
      tenants: 2,
      failing: 1,
      checks: { database: { ok: true }, shutdown: { ok: true } },
    });
    expect(text).not.toContain('broken-acme');

    const listed = (await (await d.operator('GET', '/operator/tenants')).json()) as {
      tenants: Array<{ id: string; serving: boolean; problem?: string }>;
    };
    expect(listed.tenants.find((t) => t.id === 'broken-acme')).toMatchObject({ serving: false });
    expect(listed.tenants.find((t) => t.id === 'broken-acme')?.problem).toEqual(expect.any(String));
  });

  it('turns 503 naming the check when a drain begins, and ready again after', async () => {
    d.running.deployment.draining = true;
    try {
      const ready = await d.fetch('nobody.issuers.test', '/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        status: 'not_ready',
        checks: { database: { ok: true }, shutdown: { ok: false } },
      });
      expect((await d.fetch('nobody.issuers.test', '/healthz')).status).toBe(200);
    } finally {
      d.running.deployment.draining = false;
    }
    expect((await d.fetch('nobody.issuers.test', '/readyz')).status).toBe(200);
  });

  it("turns 503 naming the database when the deployment's database cannot answer", async () => {
    const other = await startTenants(0);
    try {
      // Either engine (TEST_STORE): the registry's connection goes away under the running server.
      await other.running.deployment.namespaces.registry.close();
      const ready = await other.fetch('nobody.issuers.test', '/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        status: 'not_ready',
        checks: { database: { ok: false, error: 'unavailable' }, shutdown: { ok: true } },
      });
    } finally {
      await other.close().catch(() => {});
    }
  });
});
