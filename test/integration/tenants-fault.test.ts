import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { TEST_STORE } from '../helpers/issuer.js';
import { startTenants, type TestTenant, type TestTenants } from '../helpers/tenants.js';

/** A claims source that takes every request and never answers it, until `release`. */
async function hangingClaimsSource() {
  const held: ServerResponse[] = [];
  const waiters: Array<() => void> = [];
  const server = createServer((req, res) => {
    req.resume();
    held.push(res);
    for (const w of waiters.splice(0)) w();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/claims`,
    held,
    /** Resolves once `count` requests are held. */
    async holding(count: number) {
      while (held.length < count) await new Promise<void>((ok) => waiters.push(ok));
    },
    /** Answers every held request: the user is not eligible. */
    release() {
      for (const res of held.splice(0))
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"eligible":false}');
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

/** membership-v1 as SD-JWT VC whose claims come from `url` (waiting up to the longest timeout). */
function httpClaimsSchemas(dir: string, url: string): string {
  const schemas = join(dir, 'slow-schemas');
  const schema = JSON.parse(readFileSync('schemas/membership-v1.json', 'utf8'));
  schema.proofTypes = ['SD_JWT_VC'];
  delete schema.iden3;
  schema.claims = { provider: 'http', url, timeoutMs: 60_000 };
  mkdirSync(schemas, { recursive: true });
  writeFileSync(join(schemas, 'membership-v1.json'), JSON.stringify(schema));
  return schemas;
}

// docs/several-issuers.md "What a tenant is": a tenant's failure never slows another's requests.
// Tenant A's claims source hangs with more of A's issuances waiting on it than the deployment has
// database connections; tenant B's hosted and direct issuances complete meanwhile.
describe(`a tenant whose claims source hangs (${TEST_STORE})`, () => {
  let d: TestTenants;
  let a: TestTenant;
  let b: TestTenant;
  let source: Awaited<ReturnType<typeof hangingClaimsSource>>;
  const holder = generateHolderKeyPair('x25519');
  const POOL = 4;
  const WAITING = POOL * 3;

  beforeAll(async () => {
    source = await hangingClaimsSource();
    d = await startTenants(1, { env: { DATABASE_POOL_MAX: String(POOL), RATE_LIMIT_HOLDER_PER_MIN: '0' } });
    b = d.tenants[0]!;
    a = await d.add('slow', { schemasDir: httpClaimsSchemas(d.dir, source.url) });
  }, 120_000);
  afterAll(async () => {
    source?.release();
    await d?.close();
    await source?.close();
  });

  const hosted = (t: TestTenant, i: number) =>
    d.holder(t, '/issue-vc', {
      holderDID: `did:example:${t.id}-holder-${i}`,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });

  it("B's issuances complete while A's wait on A's claims source", async () => {
    let settledA = 0;
    const waitingA = Array.from({ length: WAITING }, (_, i) =>
      hosted(a, i).then((res) => {
        settledA++;
        return res.status;
      }),
    );
    await source.holding(WAITING);

    const fromB = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => hosted(b, i).then((res) => res.status)),
      d
        .admin(b, '/admin/issue-vc', {
          userId: 'ada.b@example.org',
          schemaId: 'membership-v1',
          claimsUserId: 'demo-user-1',
          vct: 'urn:vct:membership',
          expiration: new Date(Date.now() + 86400_000).toISOString(),
        })
        .then((res) => res.status),
      d.fetch(b.host, '/.well-known/jwt-vc-issuer').then((res) => res.status),
    ]);
    expect(fromB).toEqual([...Array(9).fill(201), 200]);
    // A's requests are all still waiting on its claims source, none answered.
    expect(settledA).toBe(0);
    expect(source.held.length).toBe(WAITING);

    // Once the source answers, A's requests end as it says (not eligible) and A issues nothing.
    source.release();
    expect(new Set(await Promise.all(waitingA))).toEqual(new Set([404]));
    const history = (await (await d.admin(a, '/admin/issuance-history')).json()) as {
      pagination: { total: number };
    };
    expect(history.pagination.total).toBe(0);
  });
});
