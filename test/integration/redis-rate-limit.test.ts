import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/logger.js';
import { redisRateLimits, type SharedRateLimits } from '../../src/rate-limit/redis-rate-limits.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';
import { capturingLogger } from '../helpers/log-capture.js';
import { redisAvailable, TEST_REDIS_URL } from '../helpers/services.js';

const available = await redisAvailable('the Redis rate-limit tests');

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };
  await new Promise((ok) => server.close(ok));
  return port;
}

const wellKnown = (i: TestIssuer) => fetch(`${i.url}/.well-known/jwt-vc-issuer`);

describe.skipIf(!available)('rate limits in Redis (REDIS_URL)', () => {
  let shared: SharedRateLimits;
  let a: TestIssuer;
  let b: TestIssuer;
  beforeAll(async () => {
    // A prefix of its own, so parallel runs on the same Redis do not count each other's requests.
    shared = redisRateLimits(TEST_REDIS_URL, {
      log: silentLogger(),
      prefix: `test-${randomBytes(6).toString('hex')}:`,
      // Counting is what is tested: a loaded machine must not turn a slow answer into a pass.
      timeoutMs: 60_000,
    });
    const env = { RATE_LIMIT_PUBLIC_PER_MIN: '6' };
    a = await startIssuer({ env, context: { rateLimitStore: shared.store } });
    b = await startIssuer({ env, context: { rateLimitStore: shared.store } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await shared?.close();
  });

  it('one limit across instances: requests to A and B count against the same client', async () => {
    const statuses: number[] = [];
    for (let n = 0; n < 8; n++) statuses.push((await wellKnown(n % 2 === 0 ? a : b)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    expect(shared.failOpenCount()).toBe(0);
  });
});

describe.skipIf(!available)('RATE_LIMIT_REDIS_PREFIX: deployments sharing one Redis', () => {
  // Two deployments, each its own REDIS_URL client and prefix, on the same Redis server.
  const run = randomBytes(6).toString('hex');
  let first: TestIssuer;
  let second: TestIssuer;
  let firstAgain: TestIssuer;
  beforeAll(async () => {
    const env = (prefix: string) => ({
      REDIS_URL: TEST_REDIS_URL,
      RATE_LIMIT_REDIS_PREFIX: `${prefix}-${run}:`,
      RATE_LIMIT_REDIS_TIMEOUT_MS: '60000',
      RATE_LIMIT_PUBLIC_PER_MIN: '3',
    });
    first = await startIssuer({ env: env('first') });
    second = await startIssuer({ env: env('second') });
    firstAgain = await startIssuer({ env: env('first') });
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await firstAgain?.close();
  });

  it('different prefixes do not share counters; the same prefix does', async () => {
    const statuses = async (issuer: TestIssuer, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await wellKnown(issuer)).status);
      return out;
    };
    expect(await statuses(first, 4)).toEqual([200, 200, 200, 429]);
    // Another deployment's budget is untouched by the first one's requests.
    expect(await statuses(second, 3)).toEqual([200, 200, 200]);
    // A second instance of the first deployment counts against the first one's budget.
    expect(await statuses(firstAgain, 1)).toEqual([429]);
    for (const issuer of [first, second, firstAgain])
      expect(issuer.ctx.sharedRateLimits!.failOpenCount()).toBe(0);
  });
});

describe('rate limits when Redis is down', () => {
  let issuer: TestIssuer;
  const capture = capturingLogger();
  beforeAll(async () => {
    issuer = await startIssuer({
      env: { REDIS_URL: `redis://127.0.0.1:${await closedPort()}`, RATE_LIMIT_PUBLIC_PER_MIN: '2' },
      context: { log: capture.log },
    });
  });
  afterAll(async () => {
    await issuer?.close();
  });

  it('requests pass (fail open), and the failure is logged and counted', async () => {
    const statuses: number[] = [];
    for (let n = 0; n < 4; n++) statuses.push((await wellKnown(issuer)).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(issuer.ctx.sharedRateLimits!.failOpenCount()).toBe(4);
    expect(capture.records().some((l) => l.event === 'rate_limit_redis_unavailable')).toBe(true);
    const metrics = await (await fetch(`${issuer.url}/metrics`)).text();
    expect(metrics).toMatch(/^issuer_rate_limit_fail_open_total 4$/m);
  });
});
