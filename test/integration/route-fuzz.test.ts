import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { routeTable } from '../../src/http/routes/index.js';
import type { Route } from '../../src/http/routes/route.js';
import { startIssuer, TEST_ADMIN_API_KEY, TEST_API_KEY, type TestIssuer } from '../helpers/issuer.js';

/** The top-level member names a route's body or query schema knows, so the fuzz reaches its checks. */
function memberNames(schema: z.ZodType | undefined): string[] {
  const shape = (schema as { shape?: Record<string, unknown> } | undefined)?.shape;
  if (shape) return Object.keys(shape);
  const inner = (
    schema as { def?: { in?: z.ZodType; schema?: z.ZodType; innerType?: z.ZodType } } | undefined
  )?.def;
  return inner ? memberNames(inner.in ?? inner.schema ?? inner.innerType) : [];
}

/** A JSON value of any shape, including the awkward ones: deep, long, non-ASCII, numbers at the edges. */
const hostileValue = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.constantFrom(
    null,
    '',
    '0x',
    'did:example:x',
    -1,
    0,
    2 ** 53,
    1e308,
    Number.MIN_VALUE,
    '__proto__',
    'constructor',
    '漢'.repeat(3000),
    { __proto__: { polluted: true } },
    [[[[[[[[[[]]]]]]]]]],
  ),
);

const bodyFor = (route: Route) => {
  const names = memberNames(route.doc.body);
  return fc.oneof(
    hostileValue,
    names.length > 0
      ? fc.dictionary(fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 12 })), hostileValue, {
          maxKeys: 8,
        })
      : fc.dictionary(fc.string({ maxLength: 12 }), hostileValue, { maxKeys: 4 }),
  );
};

const queryFor = (route: Route) => {
  const names = memberNames(route.doc.query);
  return fc.dictionary(
    fc.oneof(fc.constantFrom(...(names.length > 0 ? names : ['x'])), fc.string({ maxLength: 8 })),
    fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      fc.constantFrom('-1', '1e9', '', 'NaN', '9'.repeat(40)),
    ),
    { maxKeys: 5 },
  );
};

const pathFor = (route: Route) =>
  fc
    .array(
      fc.oneof(
        fc.string({ unit: 'grapheme', maxLength: 40 }),
        fc.constantFrom('0', '-1', '9'.repeat(30), '%', '..'),
      ),
      {
        minLength: 1,
        maxLength: 1,
      },
    )
    .map(([value]) => route.path.replace(/:(\w+)/g, () => encodeURIComponent(value ?? '')));

// docs/interface.md "Errors": malformed input is a 4xx naming the field, never a 5xx. Every row of
// the route table, with its keys given so the bodies reach its validation, gets generated bodies,
// queries and path parameters.
describe('route fuzz: no malformed input gives a 5xx', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await startIssuer({
      env: { RATE_LIMIT_HOLDER_PER_MIN: '0', RATE_LIMIT_ADMIN_PER_MIN: '0', RATE_LIMIT_PUBLIC_PER_MIN: '0' },
    });
  });
  afterAll(async () => {
    await issuer.close();
  });

  const headers = {
    'content-type': 'application/json',
    'x-api-key': TEST_API_KEY,
    'x-admin-api-key': TEST_ADMIN_API_KEY,
  };

  it('every route of the table', async () => {
    const routes = routeTable(issuer.ctx).filter((r) => !r.mountedByPath);
    expect(routes.length).toBeGreaterThan(20);
    for (const route of routes) {
      const request = fc.record({ path: pathFor(route), query: queryFor(route), body: bodyFor(route) });
      await fc.assert(
        fc.asyncProperty(request, async ({ path, query, body }) => {
          const search = new URLSearchParams(query as Record<string, string>).toString();
          const res = await fetch(`${issuer.url}${path}${search ? `?${search}` : ''}`, {
            method: route.method.toUpperCase(),
            headers,
            ...(route.method === 'post' ? { body: JSON.stringify(body) } : {}),
          });
          const text = await res.text();
          if (res.status >= 500)
            throw new Error(`${route.method.toUpperCase()} ${route.path} → ${res.status} ${text}`);
        }),
        { numRuns: 25, ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : { seed: 19 }) },
      );
    }
  });
});
