import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adaMembership } from '../helpers/direct-issue.js';
import { startTenants, TEST_OPERATOR_KEY, type TestTenants } from '../helpers/tenants.js';

// docs/several-issuers.md "The operator's console": the console on a host that is no tenant's,
// signed in with OPERATOR_API_KEY; the tenants with their state and counts, disable and enable.
describe("the operator's console", () => {
  let d: TestTenants;
  const email = 'ada.operator-console@example.org';

  beforeAll(async () => {
    d = await startTenants(2);
    const [t1] = d.tenants;
    const issued = await d.admin(t1!, '/admin/issue-vc', {
      userId: email,
      schemaId: 'membership-v1',
      ...adaMembership(),
    });
    expect(issued.status).toBe(201);
  });
  afterAll(async () => {
    await d?.close();
  });

  const form = (key: string) => ({
    method: 'POST',
    redirect: 'manual' as const,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ key }).toString(),
  });
  const signIn = async (key = TEST_OPERATOR_KEY) => {
    const res = await fetch(`${d.url}/console/sign-in`, form(key));
    const cookie = res.headers.get('set-cookie')?.split(';')[0];
    return { res, cookie };
  };
  const tenantsPage = async (cookie: string) => {
    const res = await fetch(`${d.url}/console`, { headers: { cookie }, redirect: 'manual' });
    expect(res.status).toBe(200);
    const text = await res.text();
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(text)?.[1];
    return { text, csrf: csrf! };
  };
  const rowOf = (text: string, id: string) =>
    new RegExp(`<tr data-tenant="${id}">(.*?)</tr>`).exec(text)?.[1] ?? '';

  it('asks for a sign-in, and takes the operator key only (not a tenant admin key)', async () => {
    const anonymous = await fetch(`${d.url}/console`, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toMatch(/^\/console\/sign-in/);
    const tenantKey = await signIn(d.tenants[0]!.adminKey);
    expect(tenantKey.res.status).toBe(403);
    expect(tenantKey.cookie).toBeUndefined();
    const operator = await signIn();
    expect(operator.res.status).toBe(303);
    expect(operator.cookie).toMatch(/^console_session=/);
  });

  it('lists each tenant with its state and counts, never a claim or a credential', async () => {
    const { cookie } = await signIn();
    const { text } = await tenantsPage(cookie!);
    const t1 = rowOf(text, 't1');
    expect(t1).toContain('https://t1.issuers.test');
    expect(t1).toContain('enabled');
    // Issued in the last 24 h: the one credential of beforeAll.
    expect(t1).toMatch(/<td>1<\/td>/);
    expect(rowOf(text, 't2')).toContain('enabled');
    expect(text).not.toContain(email);
    expect(text).not.toContain(adaMembership().credentialSubject.familyName);
  });

  it('disables and enables a tenant with the session and its CSRF token, in the audit', async () => {
    const { cookie } = await signIn();
    const { csrf } = await tenantsPage(cookie!);
    const post = (path: string, token?: string) =>
      fetch(`${d.url}/console${path}`, {
        method: 'POST',
        headers: {
          cookie: cookie!,
          'content-type': 'application/json',
          ...(token ? { 'x-csrf-token': token } : {}),
        },
        body: '{}',
      });
    const t2 = d.tenants[1]!;
    expect((await post('/api/tenants/t2/disable')).status).toBe(403);
    expect((await post('/api/tenants/NOT_A_LABEL/disable', csrf)).status).toBe(400);
    expect((await post('/api/tenants/t9/disable', csrf)).status).toBe(404);
    const disabled = await post('/api/tenants/t2/disable', csrf);
    expect(disabled.status).toBe(200);
    expect(((await disabled.json()) as { tenant: { enabled: boolean } }).tenant.enabled).toBe(false);
    const refused = await d.admin(t2, '/admin/issue-vc', {
      userId: email,
      schemaId: 'membership-v1',
      ...adaMembership(),
    });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { code: string }).code).toBe('TENANT_DISABLED');
    expect(rowOf((await tenantsPage(cookie!)).text, 't2')).toContain('disabled');

    expect((await post('/api/tenants/t2/enable', csrf)).status).toBe(200);
    expect(rowOf((await tenantsPage(cookie!)).text, 't2')).toContain('enabled');
    const audit = (await (await d.operator('GET', '/operator/audit')).json()) as {
      audit: Array<{ action: string; tenantId: string; actor: string }>;
    };
    expect(audit.audit.slice(0, 2)).toEqual([
      expect.objectContaining({ action: 'tenant.enabled', tenantId: 't2', actor: 'operator' }),
      expect.objectContaining({ action: 'tenant.disabled', tenantId: 't2', actor: 'operator' }),
    ]);
  });

  it("is not a tenant's console: neither's session or key opens the other's", async () => {
    const { cookie } = await signIn();
    const t1 = d.tenants[0]!;
    const onTenant = await d.fetch(t1.host, '/console', { headers: { cookie: cookie! }, redirect: 'manual' });
    expect(onTenant.status).toBe(303);
    expect(onTenant.headers.get('location')).toMatch(/^\/console\/sign-in/);
    const keyOnTenant = await d.fetch(t1.host, '/console/sign-in', form(TEST_OPERATOR_KEY));
    expect(keyOnTenant.status).toBe(403);
    // And the other way: a tenant admin's session opens no operator page.
    const tenantSignIn = await d.fetch(t1.host, '/console/sign-in', form(t1.adminKey));
    expect(tenantSignIn.status).toBe(303);
    const tenantCookie = tenantSignIn.headers.get('set-cookie')!.split(';')[0]!;
    const onDeployment = await fetch(`${d.url}/console`, {
      headers: { cookie: tenantCookie },
      redirect: 'manual',
    });
    expect(onDeployment.status).toBe(303);
    expect(onDeployment.headers.get('location')).toMatch(/^\/console\/sign-in/);
  });

  it('ends the session on sign-out', async () => {
    const { cookie } = await signIn();
    const { csrf } = await tenantsPage(cookie!);
    const out = await fetch(`${d.url}/console/sign-out`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: cookie!, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf }).toString(),
    });
    expect(out.status).toBe(303);
    const after = await fetch(`${d.url}/console`, { headers: { cookie: cookie! }, redirect: 'manual' });
    expect(after.status).toBe(303);
  });
});
