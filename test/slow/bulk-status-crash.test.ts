import { once } from 'node:events';
import { join } from 'node:path';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { type OpenedStore, openStore, parseDatabaseUrl } from '../../src/store/engines.js';
import { seedIssuances } from '../fixtures/bulk.js';
import {
  type InstanceProcess,
  isAlive,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { queryStore, removeDir, TEST_ADMIN_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable } from '../helpers/services.js';

/** The size: one job over 100,000 credentials, on SQLite. */
const COUNT = Number(process.env.BULK_CRASH_COUNT || 100_000);
/**
 * On PostgreSQL a smaller job. The job (src/status/status-jobs.ts) is the same code on both
 * engines; what each engine brings is its store's chunk transactions, lease and resume, which 20
 * chunks of 1,000 (killed after the first) exercise as 100 would. 100,000 on PostgreSQL too
 * (seeding and the job) cost over a minute of the two cores for no further proof; its throughput
 * at volume is `npm run bench`'s (bulk, both engines).
 */
const POSTGRES_COUNT = Math.min(COUNT, 20_000);
const PARTITION_SIZE = 131_072;

interface Job {
  jobId: string;
  state: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  failed: number;
}

const admin = (url: string, path: string, body?: unknown) =>
  fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

type Engine = { name: string; size: number; url: () => Promise<{ url: string; drop(): Promise<void> }> };
const engines: Engine[] = [
  {
    name: 'sqlite',
    size: COUNT,
    url: async () => {
      const dir = tempDir();
      return { url: `sqlite:${join(dir, 'issuer.db')}`, drop: async () => removeDir(dir) };
    },
  },
];
if (await postgresAvailable('the bulk status crash test on PostgreSQL'))
  engines.push({ name: 'postgres', size: POSTGRES_COUNT, url: () => createTempDatabase() });

// docs/operations.md "Bulk status changes": one job revokes 100,000 credentials (on SQLite; see
// POSTGRES_COUNT); the real server process running it is SIGKILLed mid-job and started again on
// the same database; the job ends with every credential revoked exactly once in the audit, and the
// published status lists and /revocation-status agree with the records.
describe.each(engines)('a bulk revocation of $size survives a SIGKILL ($name)', ({ size, url }) => {
  let database: { url: string; drop(): Promise<void> };
  let emulator: EmulatorServer;
  let store: OpenedStore;
  const dir = tempDir();
  const instances: InstanceProcess[] = [];
  const env = { STATUS_JOB_LEASE_MS: '2000', OUTBOX_SWEEP_MS: '200', REDIS_URL: '' };

  beforeAll(async () => {
    database = await url();
    emulator = await startEmulatorServer({ partnerId: TEST_PARTNER_ID, jwks: async () => ({ keys: [] }) });
    const target = parseDatabaseUrl(database.url, process.cwd());
    if (typeof target === 'string') throw new Error(target);
    store = await openStore(target, { poolMax: 4 });
    // Recorded through the store's own insert, as issuances are (no signing: the job never reads
    // a credential, only its record and slot).
    await seedIssuances(store, size, { schemaId: 'bulk-crash', partitionSize: PARTITION_SIZE, bits: 1 });
  }, 1_800_000);

  afterAll(async () => {
    await stopInstanceProcesses(instances);
    await store?.close();
    await emulator?.close();
    await database?.drop();
    removeDir(dir);
  });

  // Seeding and checking 100,000 records on a loaded two-core machine takes minutes: the bound
  // only ends a hung run.
  it('finishes after a restart, each credential revoked once', { timeout: 1_800_000 }, async () => {
    const start = () =>
      startInstanceProcess({ databaseUrl: database.url, serviceUrl: emulator.url, dir, env });
    const first = await start();
    instances.push(first);
    const selector = { schemaId: 'bulk-crash' };
    const dry = (await (
      await admin(first.url, '/admin/status-changes', {
        change: 'revoke',
        selector,
        reason: 'crash test',
        dryRun: true,
      })
    ).json()) as { count: number };
    expect(dry.count).toBe(size);
    const started = await admin(first.url, '/admin/status-changes', {
      change: 'revoke',
      selector,
      reason: 'crash test',
    });
    expect(started.status).toBe(202);
    const { jobId, count } = (await started.json()) as { jobId: string; count: number };
    expect(count).toBe(dry.count);

    // Killed once the job is under way and before it ends.
    let seen: Job | undefined;
    await expect
      .poll(
        async () => {
          seen = (await (await admin(first.url, `/admin/status-changes/${jobId}`)).json()) as Job;
          return seen.done;
        },
        { timeout: 300_000, interval: 20 },
      )
      .toBeGreaterThan(0);
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    expect(isAlive(first)).toBe(false);
    expect(seen!.state).toBe('running');
    expect(seen!.done).toBeLessThan(size);

    const second = await start();
    instances.push(second);
    let job: Job | undefined;
    await expect
      .poll(
        async () => {
          job = (await (await admin(second.url, `/admin/status-changes/${jobId}`)).json()) as Job;
          return job.state;
        },
        { timeout: 600_000, interval: 200 },
      )
      .toBe('done');
    expect(job).toMatchObject({ total: size, done: size, failed: 0 });
    expect(second.output.join('\n')).toContain('status_job_resumed');

    const left = await queryStore<{ n: number }>(
      store,
      "SELECT COUNT(*) AS n FROM issuances WHERE schema_id = 'bulk-crash' AND status <> 1",
    );
    expect(Number(left[0]!.n)).toBe(0);
    const audit = await queryStore<{ entries: number; targets: number }>(
      store,
      "SELECT COUNT(*) AS entries, COUNT(DISTINCT target) AS targets FROM audit_log WHERE job_id = ? AND action = 'revoke'",
      [jobId],
    );
    expect(Number(audit[0]!.entries)).toBe(size);
    expect(Number(audit[0]!.targets)).toBe(size);

    // The published lists agree with the records, bit for bit.
    const slots = await queryStore<{
      revocation_nonce: number;
      status_partition: number;
      status_index: number;
    }>(
      store,
      "SELECT revocation_nonce, status_partition, status_index FROM issuances WHERE schema_id = 'bulk-crash'",
    );
    const partitions = [...new Set(slots.map((s) => Number(s.status_partition)))];
    for (const partition of partitions) {
      const res = await fetch(`${second.url}/statuslist/${partition}`);
      expect(res.status).toBe(200);
      const list = getListFromStatusListJWT(await res.text());
      const wrong = slots.filter(
        (x) => Number(x.status_partition) === partition && list.getStatus(Number(x.status_index)) !== 1,
      );
      expect(wrong).toEqual([]);
    }
    for (const s of slots.slice(0, 100)) {
      const status = (await (
        await fetch(`${second.url}/revocation-status/${s.revocation_nonce}`)
      ).json()) as {
        isRevoked: boolean;
      };
      expect(status.isRevoked).toBe(true);
    }
  });
});
