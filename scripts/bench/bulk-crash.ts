import { once } from 'node:events';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { startEmulatorServer } from '../../src/development/emulator/index.js';
import { type OpenedStore, openStore, parseDatabaseUrl } from '../../src/store/engines.js';
import { seedIssuances } from '../../test/fixtures/bulk.js';
import {
  type InstanceProcess,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../../test/helpers/instance-process.js';
import {
  queryStore,
  removeDir,
  TEST_ADMIN_API_KEY,
  TEST_PARTNER_ID,
  tempDir,
} from '../../test/helpers/issuer.js';
import { createTempDatabase } from '../../test/helpers/services.js';

type Row = { name: string; value: number; unit: string };

/** Credentials of the job (BENCH_BULK_CRASH_COUNT); one status list partition holds them all. */
const COUNT = Number(process.env.BENCH_BULK_CRASH_COUNT || 100_000);
const PARTITION_SIZE = 131_072;
const SCHEMA = 'bulk-crash';

interface Job {
  state: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  failed: number;
}

const admin = async <T>(url: string, path: string, body?: unknown): Promise<T> => {
  const res = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`bulk-crash bench: ${path} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
};

/** Asks `read` every 20 ms until `until` holds of its answer. */
async function waitFor<T>(read: () => Promise<T>, until: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await read();
    if (until(v)) return v;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * `npm run bench -- bulk-crash` (docs/benchmarks.md "Bulk status changes"): one bulk revocation of
 * BENCH_BULK_CRASH_COUNT credentials (default 100,000) in a real server process, SIGKILLed once
 * half of it is done, then a second process on the same database taking it over after its lease
 * (`STATUS_JOB_LEASE_MS`, 2 s here), on SQLite and on PostgreSQL. It measures the job's rate in
 * each process and the time from the second start to the job's end, and fails unless every
 * credential ends revoked once in the audit log and set in the published list. The slow test
 * (test/slow/bulk-status-crash.test.ts) proves the same on a few chunks, with the kill held
 * mid-job; this is the same at volume.
 */
export async function benchBulkCrash(): Promise<Row[]> {
  const rows: Row[] = [];
  const engines: Array<[string, () => Promise<{ url: string; drop(): Promise<void> }>]> = [
    [
      'sqlite',
      async () => {
        const dir = tempDir();
        return { url: `sqlite:${join(dir, 'issuer.db')}`, drop: async () => removeDir(dir) };
      },
    ],
    ['postgres', () => createTempDatabase(process.env.BENCH_DATABASE_URL || undefined)],
  ];
  for (const [name, make] of engines) {
    let database: { url: string; drop(): Promise<void> };
    try {
      database = await make();
    } catch (err) {
      console.log(`  ${name}: skipped (${(err as Error).message})`);
      continue;
    }
    const target = parseDatabaseUrl(database.url, process.cwd());
    if (typeof target === 'string') throw new Error(target);
    const store = await openStore(target, { poolMax: 4 });
    try {
      rows.push(...(await benchEngine(name, store, database.url)));
    } finally {
      await store.close();
      await database.drop();
    }
  }
  return rows;
}

async function benchEngine(name: string, store: OpenedStore, databaseUrl: string): Promise<Row[]> {
  const seedStarted = performance.now();
  await seedIssuances(store, COUNT, { schemaId: SCHEMA, partitionSize: PARTITION_SIZE, bits: 1 });
  const seedSeconds = (performance.now() - seedStarted) / 1000;

  const dir = tempDir();
  const emulator = await startEmulatorServer({
    partnerId: TEST_PARTNER_ID,
    jwks: async () => ({ keys: [] }),
  });
  const instances: InstanceProcess[] = [];
  const start = async () => {
    const instance = await startInstanceProcess({
      databaseUrl,
      serviceUrl: emulator.url,
      dir,
      env: { STATUS_JOB_LEASE_MS: '2000', OUTBOX_SWEEP_MS: '200', REDIS_URL: '' },
    });
    instances.push(instance);
    return instance;
  };
  try {
    const first = await start();
    const created = performance.now();
    const { jobId } = await admin<{ jobId: string }>(first.url, '/admin/status-changes', {
      change: 'revoke',
      selector: { schemaId: SCHEMA },
      reason: 'bulk-crash bench',
    });
    const job = (url: string) => admin<Job>(url, `/admin/status-changes/${jobId}`);
    const before = await waitFor(
      () => job(first.url),
      (j) => j.done >= COUNT / 2 || j.state !== 'running',
    );
    const killedAt = performance.now();
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    if (before.state !== 'running')
      throw new Error(`bulk-crash bench: the job was ${before.state} before the kill`);
    // What the kill left (the API answered a moment before it).
    const [left] = await queryStore<{ done: number }>(store, 'SELECT done FROM status_jobs WHERE id = ?', [
      jobId,
    ]);
    const doneAtKill = Number(left!.done);

    const restarted = performance.now();
    const second = await start();
    const listening = performance.now();
    const after = await waitFor(
      () => job(second.url),
      (j) => j.state !== 'running',
    );
    const finished = performance.now();
    if (after.state !== 'done' || after.done !== COUNT || after.failed !== 0)
      throw new Error(`bulk-crash bench: the job ended ${JSON.stringify(after)}`);
    if (!second.output.join('\n').includes('status_job_resumed'))
      throw new Error('bulk-crash bench: the second process did not log status_job_resumed');
    await check(store, second.url, jobId);

    return [
      {
        name: `${name}: seeding ${COUNT} credentials through the store`,
        value: COUNT / seedSeconds,
        unit: '/s',
      },
      {
        name: `${name}: job in the first process, until the kill`,
        value: doneAtKill / ((killedAt - created) / 1000),
        unit: 'credentials/s',
      },
      { name: `${name}: credentials done when killed`, value: doneAtKill, unit: '' },
      { name: `${name}: second process, start until listening`, value: listening - restarted, unit: 'ms' },
      {
        name: `${name}: second process, listening until done (lease, rest of the job, publish)`,
        value: (finished - listening) / 1000,
        unit: 's',
      },
      {
        name: `${name}: job in the second process, from its start`,
        value: (COUNT - doneAtKill) / ((finished - restarted) / 1000),
        unit: 'credentials/s',
      },
      {
        name: `${name}: whole job, create to done (kill and restart included)`,
        value: (finished - created) / 1000,
        unit: 's',
      },
    ];
  } finally {
    await stopInstanceProcesses(instances);
    await emulator.close();
    removeDir(dir);
  }
}

/** Every credential revoked once in the audit log and set in the list the server publishes. */
async function check(store: OpenedStore, url: string, jobId: string): Promise<void> {
  const [audit] = await queryStore<{ entries: number; targets: number }>(
    store,
    "SELECT COUNT(*) AS entries, COUNT(DISTINCT target) AS targets FROM audit_log WHERE job_id = ? AND action = 'revoke'",
    [jobId],
  );
  const [valid] = await queryStore<{ n: number }>(
    store,
    'SELECT COUNT(*) AS n FROM issuances WHERE schema_id = ? AND status <> 1',
    [SCHEMA],
  );
  if (Number(audit!.entries) !== COUNT || Number(audit!.targets) !== COUNT || Number(valid!.n) !== 0)
    throw new Error(
      `bulk-crash bench: ${audit!.entries} audit rows for ${audit!.targets} credentials of ${COUNT}, ${valid!.n} left unrevoked`,
    );
  const slots = await queryStore<{ status_partition: number; status_index: number }>(
    store,
    'SELECT status_partition, status_index FROM issuances WHERE schema_id = ?',
    [SCHEMA],
  );
  for (const partition of new Set(slots.map((s) => Number(s.status_partition)))) {
    const res = await fetch(`${url}/statuslist/${partition}`);
    if (!res.ok) throw new Error(`bulk-crash bench: /statuslist/${partition} answered ${res.status}`);
    const list = getListFromStatusListJWT(await res.text());
    const unset = slots.filter(
      (s) => Number(s.status_partition) === partition && list.getStatus(Number(s.status_index)) !== 1,
    ).length;
    if (unset > 0)
      throw new Error(`bulk-crash bench: ${unset} revoked credentials unset in partition ${partition}`);
  }
}
