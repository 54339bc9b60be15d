import { request as httpRequest } from 'node:http';
import type { Express } from 'express';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateHolderKeyPair, openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { runCli } from '../helpers/cli.js';
import { adaMembership } from '../helpers/direct-issue.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { TEST_STORE } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { startTenants, TEST_OPERATOR_KEY, type TestTenant, type TestTenants } from '../helpers/tenants.js';

const holderJwk = {
  kty: 'EC',
  crv: 'P-256',
  x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
  y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
};

// docs/several-issuers.md: tenants of one deployment, each its own issuer, routed by host.
describe(`several issuers in one deployment (${TEST_STORE})`, () => {
  let d: TestTenants;
  let a: TestTenant;
  let b: TestTenant;
  const holder = generateHolderKeyPair('x25519');

  beforeAll(async () => {
    d = await startTenants(2);
    [a, b] = d.tenants as [TestTenant, TestTenant];
  });
  afterAll(async () => {
    await d?.close();
  });

  /** Hosted issuance on `t`: the holder's envelope from t's emulator, opened. */
  async function issueHosted(t: TestTenant, holderDid: string): Promise<string> {
    const res = await d.holder(t, '/issue-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
      signingKey: { jwk: holderJwk },
    });
    expect(res.status).toBe(201);
    const stored = [...t.emulator.emulator.state.envelopes.values()].find(
      (e) => e.envelope.holderDid === holderDid,
    );
    return openEnvelope(holder.privateKey, stored!.envelope) as string;
  }

  /** Direct issuance on `t`: the credential as the emulator's holder opens it, and its nonce. */
  async function issueDirect(t: TestTenant, email: string) {
    const res = await d.admin(t, '/admin/issue-vc', {
      userId: email,
      schemaId: 'membership-v1',
      ...adaMembership(),
    });
    expect(res.status).toBe(201);
    const { credentialId, revocationNonce } = (await res.json()) as {
      credentialId: string;
      revocationNonce: string;
    };
    const who = t.emulator.emulator.state.holderByEmail(email)!;
    const envelope = t.emulator.emulator.state.envelopes.get(credentialId)!.envelope;
    const compact = openEnvelope(privateKeyFromPkcs8Hex(who.privateKeyPkcs8Hex), envelope) as string;
    return { compact, revocationNonce };
  }

  const verifyAt = (t: TestTenant, compact: string) =>
    verifySdJwtVc(t.origin, compact, { fetch: d.fetchFor(t) });

  it('each tenant issues hosted and direct credentials that verify with its own keys only, and revokes in its own lists only', async () => {
    const issued = new Map<
      TestTenant,
      { hosted: string; direct: { compact: string; revocationNonce: string } }
    >();
    for (const t of [a, b])
      issued.set(t, {
        hosted: await issueHosted(t, `did:example:holder-of-${t.id}`),
        direct: await issueDirect(t, `ada.${t.id}@example.org`),
      });
    for (const [t, { hosted, direct }] of issued) {
      const other = t === a ? b : a;
      for (const compact of [hosted, direct.compact]) {
        const verified = await verifyAt(t, compact);
        expect((verified.payload as { iss: string }).iss).toBe(t.origin);
        expect(verified.header.kid).toBe(d.running.deployment.byId(t.id)!.ctx!.keys.current().signing.kid);
        // The other tenant's published keys do not verify it.
        await expect(verifySdJwtVc(other.origin, compact, { fetch: d.fetchFor(other) })).rejects.toThrow();
      }
    }
    // A's revocation: A's direct credential fails on its status; B's still verifies.
    const revoked = await d.admin(a, '/admin/revoke', {
      revocationNonce: issued.get(a)!.direct.revocationNonce,
    });
    expect(revoked.status).toBe(200);
    await expect(verifyAt(a, issued.get(a)!.direct.compact)).rejects.toThrow(/[Ss]tatus/);
    await verifyAt(b, issued.get(b)!.direct.compact);
    await verifyAt(a, issued.get(a)!.hosted);
    // B's history holds B's issuances only.
    const history = (await (await d.admin(b, '/admin/issuance-history')).json()) as {
      data: Array<{ holderDid: string }>;
    };
    expect(history.data.length).toBe(2);
    expect(history.data.every((i) => !i.holderDid.endsWith(`-of-${a.id}`))).toBe(true);
  });

  it("a change served to a tenant brings its webhook look, however far it has backed off, within the look's interval", async () => {
    // docs/several-issuers.md "Idle tenants": the look backs off while the tenant is idle.
    const webhooks = d.running.deployment.byId(a.id)!.ctx!.webhooks;
    const soon = vi.spyOn(webhooks, 'lookSoon');
    try {
      await issueHosted(a, 'did:example:holder-look-soon');
      // The answer to the POST, and the upload marked (background work asks too).
      await vi.waitFor(() => expect(soon).toHaveBeenCalledTimes(2));
      // Reads write no event: they ask for no look.
      expect((await d.fetch(a.host, '/.well-known/jwt-vc-issuer')).status).toBe(200);
      await d.admin(a, '/admin/issuance-history');
      expect(soon).toHaveBeenCalledTimes(2);
      // The other tenant's changes are not this tenant's.
      await issueHosted(b, 'did:example:holder-look-soon-b');
      expect(soon).toHaveBeenCalledTimes(2);
    } finally {
      soon.mockRestore();
    }
  });

  it('routes by Host too (no proxy), and an unknown host gets 404 with an empty body', async () => {
    const viaHost = (host: string, path: string) =>
      new Promise<{ status: number; body: string }>((done, fail) => {
        const url = new URL(d.url);
        const req = httpRequest({ host: url.hostname, port: url.port, path, headers: { host } }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => done({ status: res.statusCode!, body }));
        });
        req.on('error', fail);
        req.end();
      });
    const meta = await viaHost(a.host, '/.well-known/jwt-vc-issuer');
    expect(meta.status).toBe(200);
    expect(JSON.parse(meta.body).issuer).toBe(a.origin);
    const unknown = await viaHost('nobody.issuers.test', '/.well-known/jwt-vc-issuer');
    expect(unknown).toEqual({ status: 404, body: '' });
    // The deployment's own metrics: the process's, once, and the tenants served.
    const metrics = await (await d.fetch('localhost', '/metrics')).text();
    expect(metrics).toMatch(/issuer_tenants\{state="serving"\} \d/);
    expect(metrics).toMatch(/process_cpu_user_seconds_total/);
    const tenantMetrics = await (await d.fetch(a.host, '/metrics')).text();
    expect(tenantMetrics).toMatch(/issuer_http_requests_total/);
    expect(tenantMetrics).not.toMatch(/process_cpu_user_seconds_total/);
    const unknownForwarded = await d.fetch('nobody.issuers.test', '/issue-vc', { method: 'POST' });
    expect(unknownForwarded.status).toBe(404);
    expect(await unknownForwarded.text()).toBe('');
  });

  it("every tenant's app serves with one request and response prototype, which reads the deployment's settings", async () => {
    // src/app.ts sharedPrototypes: requests keep one shape whichever tenant they name.
    const apps = d.running.deployment
      .served()
      .map((t) => t.apps.all as Express | undefined)
      .filter((app) => app !== undefined);
    expect(apps.length).toBeGreaterThanOrEqual(2);
    for (const app of apps) {
      expect(app.request).toBe(apps[0]!.request);
      expect(app.response).toBe(apps[0]!.response);
    }
    // What Express reads through req.app: TRUST_PROXY=loopback believes a loopback proxy only.
    const settings = apps[0]!.request.app;
    expect(settings.get('trust proxy fn')('127.0.0.1', 0)).toBe(true);
    expect(settings.get('trust proxy fn')('203.0.113.9', 0)).toBe(false);
    expect(settings.get('etag')).toBe(false);
    expect(settings.get('x-powered-by')).toBe(false);
  });

  it("refuses a tenant's keys on another tenant's host and the operator key on tenant routes", async () => {
    expect((await d.admin(b, '/admin/issuance-history', undefined, a.adminKey)).status).toBe(403);
    expect((await d.holder(b, '/available-vc', { userId: 'demo-user-1' }, a.apiKey)).status).toBe(403);
    expect((await d.admin(a, '/admin/issuance-history', undefined, TEST_OPERATOR_KEY)).status).toBe(403);
    const asOperator = await d.fetch(a.host, '/admin/issuance-history', {
      headers: { 'x-operator-api-key': TEST_OPERATOR_KEY },
    });
    expect(asOperator.status).toBe(403);
    // The operator routes are no tenant's: on a tenant's host they are not there.
    const onTenant = await d.fetch(a.host, '/operator/tenants', {
      headers: { 'x-operator-api-key': TEST_OPERATOR_KEY },
    });
    expect(onTenant.status).toBe(404);
    expect((await d.fetch('localhost', '/operator/tenants')).status).toBe(403);
  });

  it('a tenant that cannot start answers 503 UNAVAILABLE, the others serve, and it is tried again after a back-off', async () => {
    const added = await d.operator('POST', '/operator/tenants', {
      id: 'broken',
      origin: 'https://broken.issuers.test',
      settings: { partnerId: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11', schemasDir: '/nonexistent/schemas' },
      apiKey: 'k1',
      adminApiKeys: { admin: 'k2' },
    });
    expect(added.status).toBe(201);
    expect(((await added.json()) as { tenant: { serving: boolean } }).tenant.serving).toBe(false);
    const res = await d.fetch('broken.issuers.test', '/.well-known/jwt-vc-issuer');
    expect(res.status).toBe(503);
    expect(((await res.json()) as { code: string }).code).toBe('UNAVAILABLE');
    expect((await d.fetch(a.host, '/.well-known/jwt-vc-issuer')).status).toBe(200);
    const served = d.running.deployment.byId('broken')!;
    expect(served.problem).toBeDefined();
    expect(served.failures).toBe(1);
    // Not rebuilt at every poll of the registry (100 ms here): the first retry is 2 s away.
    expect(served.retryAt! - Date.now()).toBeGreaterThan(1000);
    await d.running.deployment.sync();
    expect(d.running.deployment.byId('broken')).toBe(served);
    expect((await d.operator('POST', '/operator/tenants/broken/disable')).status).toBe(200);
    expect((await d.operator('DELETE', '/operator/tenants/broken')).status).toBe(200);
  });

  it('bad operator input is refused naming the field, and nothing changes', async () => {
    const before = await (await d.operator('GET', '/operator/tenants')).json();
    const add = (body: Record<string, unknown>) =>
      d.operator('POST', '/operator/tenants', {
        id: 'fresh',
        origin: 'https://fresh.issuers.test',
        settings: { partnerId: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11' },
        apiKey: 'k1',
        adminApiKeys: { admin: 'k2' },
        ...body,
      });
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ origin: a.origin }, 409, 'origin'],
      [{ id: a.id, origin: 'https://other.issuers.test' }, 409, 'id'],
      [{ id: 'Not_A_Label' }, 400, 'id'],
      [{ origin: 'https://fresh.issuers.test/path' }, 400, 'origin'],
      [{ origin: 'https://127.0.0.1' }, 400, 'origin'],
      [{ settings: { partnerId: 'nope' } }, 400, 'settings.partnerId'],
      [{ adminApiKeys: {} }, 400, 'adminApiKeys'],
    ];
    for (const [body, status, field] of cases) {
      const res = await add(body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(((await res.json()) as { details: { field: string } }).details.field).toBe(field);
    }
    const removeEnabled = await d.operator('DELETE', `/operator/tenants/${a.id}`);
    expect(removeEnabled.status).toBe(409);
    expect(((await removeEnabled.json()) as { details: { field: string } }).details.field).toBe('enabled');
    expect(await (await d.operator('GET', '/operator/tenants')).json()).toEqual(before);
    expect((await d.fetch('fresh.issuers.test', '/.well-known/jwt-vc-issuer')).status).toBe(404);
  });

  it('a disabled tenant answers 503 TENANT_DISABLED to issuance and admin writes, keeps its public routes, and is removed with an audit row', async () => {
    const c = await d.add('t3');
    const issued = await issueDirect(c, 'ada.t3@example.org');
    const disabled = await d.operator('POST', `/operator/tenants/${c.id}/disable`);
    expect(disabled.status).toBe(200);
    const hosted = await d.holder(c, '/issue-vc', {
      holderDID: 'did:example:late',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    expect(hosted.status).toBe(503);
    expect(((await hosted.json()) as { code: string }).code).toBe('TENANT_DISABLED');
    const write = await d.admin(c, '/admin/revoke', { revocationNonce: issued.revocationNonce });
    expect(write.status).toBe(503);
    // Reads and public routes still serve: its credentials still verify.
    expect((await d.admin(c, '/admin/issuance-history')).status).toBe(200);
    await verifyAt(c, issued.compact);
    // Other tenants are untouched.
    expect((await d.admin(a, '/admin/issuance-history')).status).toBe(200);
    const shown = (await (await d.operator('GET', `/operator/tenants/${c.id}`)).json()) as {
      tenant: { enabled: boolean };
      health: { issuedLast24h: number; uploads: { failed: number } };
    };
    expect(shown.tenant.enabled).toBe(false);
    expect(shown.health).toMatchObject({ issuedLast24h: 1, uploads: { failed: 0 } });
    expect(JSON.stringify(shown)).not.toMatch(/Ada|Lovelace|~/);

    expect((await d.operator('DELETE', `/operator/tenants/${c.id}`)).status).toBe(200);
    expect((await d.fetch(c.host, '/.well-known/jwt-vc-issuer')).status).toBe(404);
    const audit = (await (await d.operator('GET', '/operator/audit')).json()) as {
      audit: Array<{ action: string; tenantId: string }>;
    };
    expect(audit.audit.slice(0, 3).map((r) => [r.action, r.tenantId])).toEqual([
      ['tenant.removed', 't3'],
      ['tenant.disabled', 't3'],
      ['tenant.added', 't3'],
    ]);
    // Its data namespace is kept: the id cannot be taken again by another issuer.
    const again = await d.operator('POST', '/operator/tenants', {
      id: c.id,
      origin: 'https://elsewhere.issuers.test',
      settings: { partnerId: c.partnerId },
      apiKey: 'k1',
      adminApiKeys: { admin: 'k2' },
    });
    expect(again.status).toBe(409);
  });

  it('npm run admin -- tenants list|disable|enable|remove with OPERATOR_API_KEY', async () => {
    const env = { OPERATOR_API_KEY: TEST_OPERATOR_KEY };
    const cli = (...args: string[]) => runCli(['--url', d.url, 'tenants', ...args], env, process.cwd());
    const list = await cli('list');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${a.id}\\s+${a.origin}\\s+enabled`));
    expect((await cli('disable', b.id)).code).toBe(0);
    expect((await d.holder(b, '/issue-vc', {})).status).toBe(503);
    expect((await cli('enable', b.id)).code).toBe(0);
    expect((await d.holder(b, '/issue-vc', {})).status).toBe(400);
    const remove = await cli('remove', b.id);
    expect(remove.code).toBe(1);
    expect(remove.stderr).toMatch(/409 CONFLICT: enabled/);
    const keyless = await runCli(['--url', d.url, 'tenants', 'list'], {}, process.cwd());
    expect(keyless.code).toBe(1);
    expect(keyless.stderr).toMatch(/OPERATOR_API_KEY/);
  });
});

// docs/several-issuers.md "Where the data lives": on PostgreSQL a schema per tenant, and a tenant
// added through one instance is served by the other without a restart.
describe.runIf(await postgresAvailable('tenants on two PostgreSQL instances'))(
  'several issuers on two PostgreSQL instances',
  () => {
    let db: TempDatabase;
    let one: TestTenants;
    let two: TestTenants;

    beforeAll(async () => {
      db = await createTempDatabase();
      one = await startTenants(1, { env: { DATABASE_URL: db.url } });
      two = await startTenants(0, { env: { DATABASE_URL: db.url }, dir: one.dir });
    });
    afterAll(async () => {
      await two?.close();
      await one?.close();
      await db?.drop();
    });

    it("keeps each tenant's rows in its own schema and the registry in public", async () => {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const tables = async (schema: string) =>
          (
            await client.query<{ table_name: string }>(
              'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
              [schema],
            )
          ).rows.map((r) => r.table_name);
        expect(await tables('public')).toEqual(expect.arrayContaining(['tenants', 'tenant_audit']));
        expect(await tables('public')).not.toContain('issuances');
        expect(await tables('tenant_t1')).toEqual(expect.arrayContaining(['issuances', 'schema_migrations']));
      } finally {
        await client.end();
      }
    });

    it('a tenant added through one instance is served by the other, and a disable reaches it', async () => {
      const t2 = await one.add('t2');
      await vi.waitFor(() => expect(two.running.deployment.byId('t2')?.ctx).toBeDefined(), {
        timeout: 10_000,
      });
      const meta = await two.fetch(t2.host, '/.well-known/jwt-vc-issuer');
      expect(((await meta.json()) as { issuer: string }).issuer).toBe(t2.origin);
      const res = await two.admin(t2, '/admin/issue-vc', {
        userId: 'ada.two@example.org',
        schemaId: 'membership-v1',
        ...adaMembership(),
      });
      expect(res.status).toBe(201);
      expect((await one.operator('POST', '/operator/tenants/t2/disable')).status).toBe(200);
      await vi.waitFor(() => expect(two.running.deployment.byId('t2')?.record.enabled).toBe(false), {
        timeout: 10_000,
      });
      expect((await two.holder(t2, '/issue-vc', {})).status).toBe(503);
    });
  },
);
