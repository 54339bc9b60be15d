import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import {
  type InstanceProcess,
  isAlive,
  liveJwks,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { removeDir, TEST_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
import {
  createTempDatabase,
  postgresAvailable,
  redisAvailable,
  type TempDatabase,
} from '../helpers/services.js';

const available =
  (await postgresAvailable('the dead-instance upload test')) &&
  (await redisAvailable('the dead-instance upload test'));

const holder = generateHolderKeyPair('x25519');

// docs/several-instances.md: the upload outbox lives in the shared database, so an instance that
// dies mid-outage leaves its uploads to the others. Two real server processes on one PostgreSQL
// database; A issues while every upload answers 503 and is SIGKILLed mid-burst; the hosting
// service heals; B, told nothing, stores every recorded issuance upstream, each exactly once.
describe.skipIf(!available)('an instance that dies mid-outage leaves its uploads to the others', () => {
  let db: TempDatabase;
  let emulator: EmulatorServer;
  const instances: InstanceProcess[] = [];
  const dirs = [tempDir(), tempDir()];

  beforeAll(async () => {
    db = await createTempDatabase();
    emulator = await startEmulatorServer({ partnerId: TEST_PARTNER_ID, jwks: () => liveJwks(instances) });
    // A short lease and sweep, and attempts enough to outlast the outage.
    const env = { UPLOAD_LEASE_MS: '3000', OUTBOX_SWEEP_MS: '200', UPLOAD_MAX_ATTEMPTS: '1000' };
    // One after the other: concurrent first starts are test/slow/multi-instance-processes.test.ts's subject.
    for (const dir of dirs)
      instances.push(await startInstanceProcess({ databaseUrl: db.url, serviceUrl: emulator.url, dir, env }));
  });

  afterAll(async () => {
    await stopInstanceProcesses(instances);
    await emulator?.close();
    await db?.drop();
    for (const d of dirs) removeDir(d);
  });

  it('B stores every issuance A recorded, once, after A is killed and the service heals', async () => {
    const [a, b] = instances as [InstanceProcess, InstanceProcess];
    emulator.emulator.faults.failNext('dstorage', 1_000_000, 503);

    let answered = 0;
    const burst = Array.from({ length: 20 }, async (_, n) => {
      await fetch(`${a.url}/issue-vc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
        body: JSON.stringify({
          holderDID: `did:example:stranded-${n}`,
          pubKey: holder.publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
          proofType: 'SD_JWT_VC',
        }),
      }).catch(() => undefined);
      // Mid-burst: A dies without a chance to clean up, its other requests in flight.
      answered += 1;
      if (answered === 8) a.child.kill('SIGKILL');
    });
    await Promise.all(burst);
    if (isAlive(a)) await once(a.child, 'exit');
    expect(a.child.signalCode).toBe('SIGKILL');
    expect(isAlive(b)).toBe(true);

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const recorded = async () =>
        (await client.query<{ credential_id: string }>('SELECT credential_id FROM issuances')).rows.map(
          (r) => r.credential_id,
        );
      // Nothing reached the hosting service while it failed.
      expect((await recorded()).length).toBeGreaterThan(0);
      expect(emulator.emulator.state.envelopes.size).toBe(0);

      emulator.emulator.faults.clear();
      // Waits for the outcome, bounded only as a guard against a hang.
      const guard = Date.now() + 180_000;
      const until = async (done: () => Promise<boolean>) => {
        while (!(await done())) {
          expect(Date.now()).toBeLessThan(guard);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      // Every recorded issuance stored upstream, and B's marks committed after the stores.
      await until(async () => (await recorded()).every((id) => emulator.emulator.state.envelopes.has(id)));
      await until(
        async () =>
          (
            await client.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM issuances WHERE upload_state <> 'uploaded'",
            )
          ).rows[0]!.n === 0,
      );

      const ids = await recorded();
      expect(new Set(emulator.emulator.state.envelopes.keys())).toEqual(new Set(ids));
      // Stored once each (the service keeps one envelope per externalId, checked above), and
      // every upload accepted. An attempt whose answer came after its deadline on a loaded machine
      // is tried again with the same externalId, so a second accepted request for an id is the
      // outbox's at-least-once delivery, not a second credential.
      const accepted = emulator.emulator.state.requests.filter(
        (r) => r.route === 'dstorage' && r.status >= 200 && r.status < 300,
      );
      expect(new Set(accepted.map((r) => r.externalId))).toEqual(new Set(ids));
    } finally {
      await client.end();
    }
  });
});
