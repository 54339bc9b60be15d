import { once } from 'node:events';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import {
  type InstanceProcess,
  isAlive,
  liveJwks,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { removeDir, TEST_ADMIN_API_KEY, TEST_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, redisAvailable } from '../helpers/services.js';
import {
  type WebhookAttempt as Attempt,
  type WebhookReceiver as Receiver,
  webhookReceiver,
} from '../helpers/webhook-receiver.js';

const holder = generateHolderKeyPair('x25519');

/**
 * The burst of each test. What it has to show does not grow with the count: a SIGKILL that lands
 * mid-burst (at half of it, six requests in flight), deliveries of both kinds of issuance and of
 * every process meeting the receiver's failures, more than 16 deliveries held at once across two
 * instances, and more events than one page of the deliveries route (DELIVERIES_PAGE) holds. 90
 * issuances (about 200 events) show all of it as 300 did; webhook delivery at volume is
 * `npm run bench -- webhooks`.
 */
const COUNTS = { hosted: 60, direct: 30, parallel: 6 };
/** Valid credentials revoked after the burst: each a `credential.revoked` event. */
const REVOKES = 15;
/** The page size the deliveries are listed with, so that listing them walks several pages. */
const DELIVERIES_PAGE = 100;
const redis = await redisAvailable('the webhook crash tests');
const postgres = redis && (await postgresAvailable('the two-instance webhook crash test'));

const call = (url: string, path: string, body?: unknown, admin = true) =>
  fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      'content-type': 'application/json',
      ...(admin ? { 'x-admin-api-key': TEST_ADMIN_API_KEY } : { 'x-api-key': TEST_API_KEY }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

/** Every page of an endpoint's deliveries in `state`, walked by cursor. */
async function allDeliveries(url: string, endpointId: string, state: string) {
  const rows: Array<{ id: string; attempts: number }> = [];
  let cursor: string | null = null;
  do {
    const res = await call(
      url,
      `/admin/webhooks/${endpointId}/deliveries?status=${state}&limit=${DELIVERIES_PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(res.status).toBe(200);
    const page = (await res.json()) as {
      deliveries: Array<{ id: string; attempts: number }>;
      pagination: { nextCursor: string | null };
    };
    rows.push(...page.deliveries);
    cursor = page.pagination.nextCursor;
  } while (cursor);
  return rows;
}

/** Every page of an admin list (issuance history, audit). */
async function all<T>(url: string, path: string): Promise<T[]> {
  const rows: T[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res = await call(
      url,
      `${path}${sep}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(res.status).toBe(200);
    const page = (await res.json()) as { data: T[]; pagination: { nextCursor: string | null } };
    rows.push(...page.data);
    cursor = page.pagination.nextCursor;
  } while (cursor);
  return rows;
}

const hostedBody = (n: number) => ({
  holderDID: `did:example:hook-${n}`,
  pubKey: holder.publicKeyHex,
  userId: 'demo-user-1',
  schemaId: 'membership-v1',
  proofType: 'SD_JWT_VC',
});
const directBody = (n: number) => ({
  userId: `hook.${n}@example.org`,
  schemaId: 'membership-v1',
  vct: 'urn:vct:membership',
  expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
  credentialSubject: {
    givenName: 'Web',
    familyName: 'Hook',
    memberSince: '2022-01-01',
    tier: 'basic',
    memberNumber: n + 1,
  },
});

/**
 * The issuance burst: `hosted` hosted and `direct` direct issuances, `parallel` at a time, each
 * through `instance(n)` (awaited: it may be restarting); `onAnswer` sees each answer as it comes.
 */
async function burst(
  counts: { hosted: number; direct: number; parallel: number },
  instance: (n: number) => Promise<InstanceProcess>,
  onAnswer: (answered: number) => void,
) {
  // Hosted and direct interleaved.
  const jobs: Array<readonly [string, unknown, boolean]> = [];
  for (let n = 0; n < Math.max(counts.hosted, counts.direct); n++) {
    if (n < counts.hosted) jobs.push(['/issue-vc', hostedBody(n), false]);
    if (n < counts.direct) jobs.push(['/admin/issue-vc', directBody(n), true]);
  }
  let next = 0;
  let answered = 0;
  const statuses: Array<number | 'cut'> = [];
  await Promise.all(
    Array.from({ length: counts.parallel }, async () => {
      while (next < jobs.length) {
        const n = next++;
        const [path, body, admin] = jobs[n]!;
        const target = await instance(n);
        const res = await call(target.url, path, body, admin).catch(() => undefined);
        statuses.push(res?.status ?? 'cut');
        onAnswer(++answered);
      }
    }),
  );
  return statuses;
}

/** Revokes `count` valid credentials, through `instance(n)`. */
async function revoke(count: number, instance: (n: number) => InstanceProcess) {
  const history = await all<{ revocationNonce: string; status: string }>(
    instance(0).url,
    '/admin/issuance-history?status=valid',
  );
  expect(history.length).toBeGreaterThanOrEqual(count);
  for (const [n, r] of history.slice(0, count).entries()) {
    const res = await call(instance(n).url, '/admin/revoke', { revocationNonce: r.revocationNonce });
    expect(res.status).toBe(200);
  }
}

/**
 * What the database says happened (the history and the audit) against what the receiver got:
 * every event arrives with a valid signature and a 2xx; an id answered 2xx twice only if an
 * earlier attempt of it failed, was cut, or was answered before `killMark` (the number of attempts
 * received before only live processes could be sending) and so may not have been recorded.
 */
async function expectEveryEventOnce(url: string, endpointId: string, hook: Receiver, killMark: number) {
  const delivered = (type: string, key: string) =>
    new Set(
      hook.attempts.filter((a) => a.type === type && a.answered === 204).map((a) => String(a.data[key])),
    );
  const missing = async () => {
    const history = await all<{ credentialId: string; uploadState: string; revocationNonce: string }>(
      url,
      '/admin/issuance-history',
    );
    const revokes = await all<{ target: string }>(url, '/admin/audit?action=revoke');
    const issued = delivered('credential.issued', 'credentialId');
    const uploaded = delivered('credential.delivered', 'credentialId');
    const revoked = delivered('credential.revoked', 'revocationNonce');
    const pending = await allDeliveries(url, endpointId, 'pending');
    return [
      ...history.filter((h) => !issued.has(h.credentialId)).map((h) => `issued ${h.credentialId}`),
      ...history
        .filter((h) => h.uploadState === 'uploaded' && !uploaded.has(h.credentialId))
        .map((h) => `delivered ${h.credentialId}`),
      ...history.filter((h) => h.uploadState !== 'uploaded').map((h) => `upload of ${h.credentialId}`),
      ...revokes.filter((r) => !revoked.has(r.target)).map((r) => `revoked ${r.target}`),
      ...(pending.length > 0 ? [`${pending.length} pending deliveries`] : []),
    ];
  };
  // The test's timeout bounds this: retries and an expired lease run on their own time.
  await expect.poll(missing, { interval: 200, timeout: 500_000 }).toEqual([]);

  // Every delivery the issuer recorded was received and answered 2xx; none failed for good.
  expect(await allDeliveries(url, endpointId, 'failed')).toEqual([]);
  const recorded = await allDeliveries(url, endpointId, 'delivered');
  const ok = new Set(hook.attempts.filter((a) => a.answered === 204).map((a) => a.id));
  expect(recorded.filter((d) => !ok.has(d.id))).toEqual([]);
  // Nothing arrived that the issuer does not know, and every signature verifies.
  expect(new Set(hook.attempts.map((a) => a.id))).toEqual(new Set(recorded.map((d) => d.id)));
  expect(hook.attempts.filter((a) => !a.valid)).toEqual([]);

  // Duplicates only where an earlier attempt failed or was cut.
  const unexplained: string[] = [];
  const byId = new Map<string, Array<Attempt & { at: number }>>();
  for (const [at, a] of hook.attempts.entries()) byId.set(a.id, [...(byId.get(a.id) ?? []), { ...a, at }]);
  for (const [id, tries] of byId) {
    const oks = tries.filter((t) => t.answered === 204);
    for (const extra of oks.slice(1)) {
      const before = tries.filter((t) => t.at < extra.at);
      if (!before.some((t) => t.answered !== 204 || t.at < killMark)) unexplained.push(id);
    }
  }
  expect(unexplained).toEqual([]);
  return { events: byId.size, failed: hook.attempts.filter((a) => a.answered !== 204).length };
}

/** Registers the receiver for every event type; answers the endpoint id. */
async function register(url: string, hook: Receiver): Promise<string> {
  const added = await call(url, '/admin/webhooks', { url: hook.url, events: ['*'] });
  expect(added.status).toBe(201);
  const endpoint = (await added.json()) as { id: string; secret: string };
  hook.setSecret(endpoint.secret);
  return endpoint.id;
}

// docs/operations.md "Webhooks": every event reaches the receiver at least once, signed, across a
// receiver that fails, an issuer SIGKILLed mid-burst and (several instances) one that never returns.
describe.skipIf(!redis)('webhooks across crashes (real processes)', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  const fast = {
    OUTBOX_SWEEP_MS: '100',
    WEBHOOK_RETRY_BASE_MS: '50',
    WEBHOOK_MAX_ATTEMPTS: '100',
    // A lease longer than an attempt can last (10 s), so only a dead instance's lease runs out.
    WEBHOOK_LEASE_MS: '12000',
    UPLOAD_LEASE_MS: '3000',
  };

  it('one instance on SQLite, SIGKILLed mid-burst and restarted on the same data, while the receiver fails', async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const instances: InstanceProcess[] = [];
    cleanup.push(() => stopInstanceProcesses(instances));
    // The restarted process has the same keys (the same KEYS_DIR) and uploads what its
    // predecessor left before the test knows its address: the last JWKS seen stays good.
    let lastJwks: Awaited<ReturnType<typeof liveJwks>> = { keys: [] };
    const emulator = await startEmulatorServer({
      partnerId: TEST_PARTNER_ID,
      jwks: async () => {
        const live = await liveJwks(instances);
        if (live.keys.length > 0) lastJwks = live;
        return lastJwks;
      },
    });
    cleanup.push(() => emulator.close());
    const hook = await webhookReceiver('fail');
    cleanup.push(() => hook.close());
    const start = () =>
      startInstanceProcess({
        databaseUrl: `sqlite:${join(dir, 'issuer.db')}`,
        serviceUrl: emulator.url,
        dir,
        env: fast,
      });
    const first = await start();
    instances.push(first);
    const endpointId = await register(first.url, hook);

    // The receiver's failing first phase, tied to events rather than to a clock (a minute is a
    // different amount of work on every machine): it answers 500 from the start until the issuer
    // has been killed and restarted and as many attempts have failed as there are issuances, so
    // that deliveries of the first process, of the restarted one, and of both kinds of issuance
    // all meet failures; then 204.
    const counts = COUNTS;
    let markRestarted!: () => void;
    const restartedAt = new Promise<void>((ok) => {
      markRestarted = ok;
    });
    const healed = (async () => {
      await hook.until(() => hook.attempts.length >= counts.hosted + counts.direct);
      await restartedAt;
      const after = hook.attempts.length;
      await hook.until(() => hook.attempts.length >= after + 20);
      hook.setMode('ok');
    })();

    let live: Promise<InstanceProcess> = Promise.resolve(first);
    let killMark = Number.POSITIVE_INFINITY;
    const statuses = await burst(
      counts,
      () => live,
      (answered) => {
        if (answered !== (counts.hosted + counts.direct) / 2) return;
        // Mid-burst: killed without a chance to clean up, then started again on the same data.
        // Whatever arrived before the new process listens came from the killed one.
        first.child.kill('SIGKILL');
        live = once(first.child, 'exit').then(async () => {
          const again = await start();
          killMark = hook.attempts.length;
          instances.push(again);
          return again;
        });
        void live.then(() => markRestarted());
      },
    );
    const restarted = await live;
    expect(first.child.signalCode).toBe('SIGKILL');
    expect(isAlive(restarted)).toBe(true);
    expect(statuses.filter((s) => s === 201 || s === 202).length).toBeGreaterThan(counts.hosted);
    await revoke(REVOKES, () => restarted);
    await healed;

    const { events, failed } = await expectEveryEventOnce(restarted.url, endpointId, hook, killMark);
    // The receiver's failing phase was seen and retried through, and the deliveries took more
    // than one page of the deliveries route to list.
    expect(failed).toBeGreaterThanOrEqual(counts.hosted + counts.direct);
    expect(events).toBeGreaterThan(DELIVERIES_PAGE);
  }, 600_000);

  it.skipIf(!postgres)(
    'two instances on PostgreSQL, one killed for good: the survivor delivers what the dead one had taken',
    async () => {
      const db = await createTempDatabase();
      cleanup.push(() => db.drop());
      const dirs = [tempDir(), tempDir()];
      cleanup.push(() => {
        for (const d of dirs) removeDir(d);
      });
      const instances: InstanceProcess[] = [];
      cleanup.push(() => stopInstanceProcesses(instances));
      const emulator = await startEmulatorServer({
        partnerId: TEST_PARTNER_ID,
        jwks: () => liveJwks(instances),
      });
      cleanup.push(() => emulator.close());
      const hook = await webhookReceiver('fail');
      cleanup.push(() => hook.close());
      const env = fast;
      const [a, b] = (await Promise.all(
        dirs.map((dir) => startInstanceProcess({ databaseUrl: db.url, serviceUrl: emulator.url, dir, env })),
      )) as [InstanceProcess, InstanceProcess];
      instances.push(a, b);
      const endpointId = await register(a.url, hook);
      const counts = COUNTS;

      // 500 for as many attempts as there are issuances; then requests are held. Each instance has
      // at most 16 requests open to one receiver (its connections per origin), so more than 16
      // held means both instances hold some: then A dies,
      // every held request is cut, and the receiver answers 500 for 5 more attempts (B's retries,
      // and anything A had sent before it died), then 204.
      let killMark = Number.POSITIVE_INFINITY;
      let held: Attempt[] = [];
      const killed = hook
        .until(() => hook.attempts.length >= counts.hosted + counts.direct)
        .then(async () => {
          hook.setMode('hold');
          // Open ones only: a sender gives up on a request after 10 s.
          await hook.until(() => hook.held.filter((h) => !h.res.socket?.destroyed).length > 16);
          a.child.kill('SIGKILL');
          await once(a.child, 'exit');
          hook.setMode('fail');
          held = hook.held.map((h) => h.attempt);
          hook.cut();
          const after = hook.attempts.length;
          await hook.until(() => hook.attempts.length >= after + 5);
          killMark = hook.attempts.length;
          hook.setMode('ok');
        });

      const statuses = await burst(
        counts,
        async (n) => (n % 2 === 0 && isAlive(a) ? a : b),
        () => undefined,
      );
      await killed;
      expect(a.child.signalCode).toBe('SIGKILL');
      expect(statuses.filter((s) => s === 201 || s === 202).length).toBeGreaterThan(counts.hosted);
      await revoke(REVOKES, () => b);

      expect(held.length).toBeGreaterThan(16);
      const { events } = await expectEveryEventOnce(b.url, endpointId, hook, killMark);
      expect(events).toBeGreaterThan(DELIVERIES_PAGE);
      // Every held delivery, A's among them (A's leases had to run out first), arrived again
      // after A was dead and was answered: from B.
      const ok = new Set(
        hook.attempts.filter((t, at) => t.answered === 204 && at >= killMark).map((t) => t.id),
      );
      expect(held.filter((t) => !ok.has(t.id))).toEqual([]);
    },
    600_000,
  );
});
