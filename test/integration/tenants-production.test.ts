import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTenants, type TestTenants } from '../helpers/tenants.js';

// docs/several-issuers.md "The operator" and docs/security.md "Production secret rule": in
// production a tenant's keys to the routes and its hosting-service URL obey the rules a single
// deployment's API_KEY, ADMIN_API_KEY(S) and SERVICE_V1_BASE_URL obey.
describe('adding a tenant in production', () => {
  let d: TestTenants;
  const strong = () => randomBytes(32).toString('base64url');

  beforeAll(async () => {
    d = await startTenants(0, {
      env: { NODE_ENV: 'production', KEY_ENCRYPTION_KEY: randomBytes(32).toString('hex') },
    });
  });
  afterAll(async () => {
    await d?.close();
  });

  it('refuses weak keys and an http hosting service naming the field, and registers nothing', async () => {
    const add = (body: Record<string, unknown>) =>
      d.operator('POST', '/operator/tenants', {
        id: 'acme',
        origin: 'https://acme.issuers.test',
        settings: {
          partnerId: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11',
          serviceBaseUrl: 'https://service.issuers.test/v1',
        },
        apiKey: strong(),
        adminApiKeys: { admin: strong() },
        ...body,
      });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ apiKey: 'k1' }, 'apiKey'],
      [{ apiKey: 'a'.repeat(40) }, 'apiKey'],
      [{ adminApiKeys: { admin: strong(), ops: 'short' } }, 'adminApiKeys.ops'],
      [
        {
          settings: {
            partnerId: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11',
            serviceBaseUrl: 'http://service.issuers.test/v1',
          },
        },
        'settings.serviceBaseUrl',
      ],
    ];
    for (const [body, field] of cases) {
      const res = await add(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const answer = (await res.json()) as { code: string; details: { field: string } };
      expect(answer.code).toBe('INVALID_PARAMETER');
      expect(answer.details.field).toBe(field);
    }
    expect(await (await d.operator('GET', '/operator/tenants')).json()).toEqual({ tenants: [] });
    expect(await (await d.operator('GET', '/operator/audit')).json()).toEqual({ audit: [] });
    // Generated keys and an https hosting service pass.
    const accepted = await add({});
    expect(accepted.status).toBe(201);
    expect(((await accepted.json()) as { tenant: { id: string } }).tenant.id).toBe('acme');
  });
});
