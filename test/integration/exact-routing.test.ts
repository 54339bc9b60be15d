import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeTable } from '../../src/http/routes/index.js';
import { startIssuer, TEST_ADMIN_API_KEY, TEST_API_KEY, type TestIssuer } from '../helpers/issuer.js';

// docs/security.md "What the server exposes": paths match exactly (case and trailing slash), so
// a proxy rule that blocks `/admin` or `/metrics` case-sensitively cannot be walked around; and
// /docs serves only the files its page loads.
describe('exact routing', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
  });

  const headers = {
    'x-api-key': TEST_API_KEY,
    'x-admin-api-key': TEST_ADMIN_API_KEY,
    'content-type': 'application/json',
  };
  const call = (method: string, path: string) =>
    fetch(`${issuer.url}${path}`, {
      method: method.toUpperCase(),
      headers,
      ...(method === 'post' ? { body: '{}' } : {}),
    });
  const concrete = (path: string) => path.replace(/:(\w+)/g, '1');
  const variants = (path: string) => {
    const upper = path.replace(/[a-z]/, (c) => c.toUpperCase());
    return [path.toUpperCase(), upper, `${path}/`];
  };

  it('every admin and ops route answers 404 for its path in other case or with a trailing slash', async () => {
    const routes = routeTable(issuer.ctx).filter(
      (r) => !r.mountedByPath && (r.group === 'admin' || r.group === 'ops'),
    );
    expect(routes.length).toBeGreaterThan(10);
    for (const route of routes) {
      const path = concrete(route.path);
      if (path === '/') continue;
      for (const variant of variants(path)) {
        const res = await call(route.method, variant);
        expect({ route: route.path, variant, status: res.status }).toEqual({
          route: route.path,
          variant,
          status: 404,
        });
        await res.body?.cancel();
      }
    }
  });

  it.each(['/ADMIN/KEYS', '/Admin/keys', '/METRICS', '/metrics/', '/admin/keys/', '/HEALTHZ', '/Docs'])(
    '%s is 404',
    async (path) => {
      const res = await fetch(`${issuer.url}${path}`, { headers });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { code: string }).code).toBe('NOT_FOUND');
    },
  );

  it('the exact paths still answer', async () => {
    for (const path of ['/admin/keys', '/metrics', '/healthz', '/docs', '/.well-known/jwt-vc-issuer']) {
      const res = await fetch(`${issuer.url}${path}`, { headers });
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      await res.body?.cancel();
    }
  });

  it.each([
    '/docs/package.json',
    '/docs/README.md',
    '/docs/index.html',
    '/docs/swagger-initializer.js',
    '/docs/swagger-ui-bundle.js.map',
    '/docs/absolute-path.js',
    '/docs/oauth2-redirect.html',
  ])('/docs does not serve the package file %s', async (path) => {
    const res = await fetch(`${issuer.url}${path}`);
    expect(res.status).toBe(404);
    await res.body?.cancel();
  });

  it('/docs serves the assets its page loads', async () => {
    for (const [path, type] of [
      ['/docs/swagger-ui.css', /^text\/css/],
      ['/docs/swagger-ui-bundle.js', /^application\/javascript/],
      ['/docs/favicon-32x32.png', /^image\/png/],
      ['/docs/docs-init.js', /^application\/javascript/],
    ] as const) {
      const res = await fetch(`${issuer.url}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(res.headers.get('content-type')).toMatch(type);
      await res.body?.cancel();
    }
  });
});
