import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTenants, type TestTenant, type TestTenants } from '../helpers/tenants.js';

/** A GET on the deployment's listener with the given headers, as any client can send them. */
function get(url: string, path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: string }>((done, fail) => {
    const at = new URL(url);
    const req = request({ host: at.hostname, port: at.port, path, headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => done({ status: res.statusCode!, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

// docs/several-issuers.md "Routing": without TRUST_PROXY a request goes to the tenant its Host
// names; an X-Forwarded-Host a client writes picks no tenant.
describe('TRUST_PROXY off: X-Forwarded-Host does not route', () => {
  let d: TestTenants;
  let a: TestTenant;

  beforeAll(async () => {
    d = await startTenants(1, { env: { TRUST_PROXY: 'false' } });
    a = d.tenants[0]!;
  });
  afterAll(async () => {
    await d?.close();
  });

  it("routes by Host, whatever the client's X-Forwarded-Host says", async () => {
    const spoofed = await get(d.url, '/.well-known/jwt-vc-issuer', {
      host: 'nobody.issuers.test',
      'x-forwarded-host': a.host,
    });
    expect(spoofed).toEqual({ status: 404, body: '' });
    const byHost = await get(d.url, '/.well-known/jwt-vc-issuer', {
      host: a.host,
      'x-forwarded-host': 'nobody.issuers.test',
    });
    expect(byHost.status).toBe(200);
    expect((JSON.parse(byHost.body) as { issuer: string }).issuer).toBe(a.origin);
  });

  it("a Host that spells out its origin's default port names the same tenant; another port does not", async () => {
    // RFC 9110 §4.2.2/§4.2.1: https://h:443 and https://h are one origin (a.origin is https).
    const withPort = await get(d.url, '/.well-known/jwt-vc-issuer', { host: `${a.host.toUpperCase()}:443` });
    expect(withPort.status).toBe(200);
    expect((JSON.parse(withPort.body) as { issuer: string }).issuer).toBe(a.origin);
    expect(await get(d.url, '/.well-known/jwt-vc-issuer', { host: `${a.host}:8443` })).toEqual({
      status: 404,
      body: '',
    });
  });
});
