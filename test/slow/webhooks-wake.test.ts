import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulatorServer } from '../../src/development/emulator/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { newWebhookEventId } from '../../src/store/webhook-store.js';
import {
  type InstanceProcess,
  liveJwks,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { removeDir, TEST_ADMIN_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, redisAvailable } from '../helpers/services.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

const ready =
  (await redisAvailable('the webhook wake-up test')) && (await postgresAvailable('the webhook wake-up test'));

const admin = (url: string, path: string, body: unknown) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY },
    body: JSON.stringify(body),
  });

const directBody = (n: number) => ({
  userId: `wake.${n}@example.org`,
  schemaId: 'membership-v1',
  vct: 'urn:vct:membership',
  expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
  credentialSubject: {
    givenName: 'Wake',
    familyName: 'Up',
    memberSince: '2022-01-01',
    tier: 'basic',
    memberNumber: n + 1,
  },
});

// docs/operations.md "Webhooks": on PostgreSQL a new event, written by any process, goes out soon
// (each instance's worker looks for new events every 250 ms), not at the next sweep; still one
// instance at a time per delivery.
describe.skipIf(!ready)('webhook wake-up on PostgreSQL (real processes)', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('events from either instance, or from another writer, are delivered without waiting for the sweep, each once, also after the database ended every connection', async () => {
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
    const hook = await webhookReceiver();
    cleanup.push(() => hook.close());
    // The longest sweep interval there is: only a wake-up can deliver within the test's time.
    const env = { OUTBOX_SWEEP_MS: '600000' };
    const [a, b] = (await Promise.all(
      dirs.map((dir) => startInstanceProcess({ databaseUrl: db.url, serviceUrl: emulator.url, dir, env })),
    )) as [InstanceProcess, InstanceProcess];
    instances.push(a, b);
    const added = await admin(a.url, '/admin/webhooks', { url: hook.url, events: ['*'] });
    expect(added.status).toBe(201);

    // Direct issuances through both instances, a few at a time.
    const issued = await Promise.all(
      Array.from({ length: 24 }, async (_, n) => {
        const res = await admin((n % 2 === 0 ? a : b).url, '/admin/issue-vc', directBody(n));
        expect(res.status).toBe(201);
        return ((await res.json()) as { credentialId: string }).credentialId;
      }),
    );
    const issuedIds = () =>
      new Set(hook.attempts.filter((r) => r.type === 'credential.issued').map((r) => r.data.credentialId));
    await expect.poll(issuedIds, { timeout: 60_000 }).toEqual(new Set(issued));

    // A writer that is neither instance (here, this test's own connection to the database).
    const writer = await openPostgresStore(db.url, { poolMax: 1, migrate: false });
    cleanup.push(() => writer.close());
    const record = (kid: string) =>
      writer.webhooks.recordEvent(
        { id: newWebhookEventId(), type: 'key.rotated', data: JSON.stringify({ kid }) },
        new Date(),
      );
    const rotated = () => hook.attempts.filter((r) => r.type === 'key.rotated').map((r) => r.data.kid);
    await record('from-outside');
    await expect.poll(rotated, { timeout: 60_000 }).toEqual(['from-outside']);

    // The database ends every connection of both instances: their pools connect again, and the
    // next event still goes out without a sweep. Nothing LISTENs (a notifying commit would
    // serialise the writes of every instance).
    const server = new pg.Client({ connectionString: db.url });
    await server.connect();
    cleanup.push(() => server.end());
    // The instances' connections: not this client's, nor the outside writer's (its pool holds one).
    const { rows: mine } = await writer.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const others = `datname = current_database() AND pid <> pg_backend_pid() AND pid <> ${mine[0]!.pid} AND backend_type = 'client backend'`;
    await server.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${others}`);
    await record('after-reconnect');
    await expect.poll(rotated, { timeout: 60_000 }).toEqual(['from-outside', 'after-reconnect']);
    const listening = await server.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${others} AND query LIKE 'LISTEN %'`,
    );
    expect(listening.rows[0]).toEqual({ n: 0 });
    const triggers = await server.query(
      "SELECT tgname FROM pg_trigger WHERE tgrelid = 'webhook_events'::regclass AND NOT tgisinternal",
    );
    expect(triggers.rows).toEqual([]);

    // Every delivery arrived once: two instances woken together never both sent one.
    // (Direct issuances upload too: their credential.delivered events come as well.)
    const ids = hook.attempts.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(hook.attempts.filter((r) => r.type === 'credential.issued')).toHaveLength(issued.length);
  }, 300_000);
});
