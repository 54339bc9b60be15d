import { once } from 'node:events';
import { join } from 'node:path';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import type pg from 'pg';
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

/**
 * Three chunks of the job (1,000 credentials a transaction, src/status/status-jobs.ts): the first
 * committed before the kill, the second cut by it, the last left to the second process. What the
 * count has to prove is that the kill lands mid-job, and a gate (below) holds the job there
 * whatever the machine's speed; a job over 100,000 credentials killed half-way is
 * `npm run bench -- bulk-crash` (docs/benchmarks.md "Bulk status changes").
 */
const SIZE = 2_500;
const PARTITION_SIZE = 131_072;
const SCHEMA = 'bulk-crash';

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

/**
 * What holds the job after its first chunk until the first process is killed, so that the kill
 * lands mid-job on any machine, and lets it go again for the second process.
 */
interface Gate {
  /** Set before the job is created. */
  arm(store: OpenedStore): Promise<void>;
  /** Resolves once the job is held (its first chunk committed, the next one stopped). */
  held(store: OpenedStore): Promise<void>;
  /** After the kill: the job as the killed process left it. */
  release(store: OpenedStore): Promise<void>;
}

/**
 * SQLite: a chunk is one synchronous transaction, so a kill lands before or after one, never
 * inside it (SQLite's atomic commit). A trigger takes the job's lease from its runner as its first
 * chunk commits (the runner stops at its next chunk, src/status/status-jobs.ts "the lease went to
 * another instance"), keeping the runner's owner and lease; the release puts them back, leaving
 * the row as a kill right after the first chunk leaves it: the second process takes the job over
 * once that lease runs out.
 */
const sqliteGate = (): Gate => ({
  async arm(store) {
    await queryStore(store, 'CREATE TABLE crash_gate (job_id TEXT, owner TEXT, lease_until INTEGER)');
    await queryStore(
      store,
      `CREATE TRIGGER crash_gate AFTER UPDATE OF done ON status_jobs
       WHEN NEW.done > 0 AND NEW.lease_owner <> 'crash-gate'
       BEGIN
         INSERT INTO crash_gate VALUES (NEW.id, NEW.lease_owner, NEW.lease_until);
         UPDATE status_jobs SET lease_owner = 'crash-gate', lease_until = 9007199254740991 WHERE id = NEW.id;
       END`,
    );
  },
  async held(store) {
    await expect
      .poll(
        async () => (await queryStore<{ n: number }>(store, 'SELECT COUNT(*) AS n FROM crash_gate'))[0]!.n,
      )
      .toBe(1);
  },
  async release(store) {
    await queryStore(store, 'DROP TRIGGER crash_gate');
    await queryStore(
      store,
      `UPDATE status_jobs SET lease_owner = g.owner, lease_until = g.lease_until
       FROM crash_gate AS g WHERE g.job_id = status_jobs.id`,
    );
    await queryStore(store, 'DROP TABLE crash_gate');
  },
});

/**
 * PostgreSQL: a chunk is a transaction of several statements, and the kill lands inside the
 * second one. The test locks one credential of the second chunk before the job starts; the second
 * chunk's UPDATE waits for it with the job row locked and part of its rows changed. After the
 * kill the lock goes: that statement ends, its backend finds its client gone and the transaction
 * is rolled back, which the second process's first chunk waits for (the job row's lock).
 */
const postgresGate = (): Gate => {
  let client: pg.PoolClient | undefined;
  let pid = 0;
  return {
    async arm(store) {
      if (store.kind !== 'postgres') throw new Error('a PostgreSQL gate on SQLite');
      client = await store.pool.connect();
      await client.query('BEGIN');
      // Found first, then locked alone (a locking SELECT with OFFSET locks the rows it skips).
      const { rows } = await client.query<{ credential_id: string }>(
        'SELECT credential_id FROM issuances WHERE schema_id = $1 ORDER BY credential_id OFFSET 1500 LIMIT 1',
        [SCHEMA],
      );
      const locked = await client.query('SELECT 1 FROM issuances WHERE credential_id = $1 FOR UPDATE', [
        rows[0]!.credential_id,
      ]);
      expect(locked.rowCount).toBe(1);
      pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    },
    async held(store) {
      await expect
        .poll(async () =>
          Number(
            (
              await queryStore<{ n: number }>(
                store,
                'SELECT COUNT(*) AS n FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))',
                [pid],
              )
            )[0]!.n,
          ),
        )
        .toBeGreaterThan(0);
    },
    async release() {
      await client?.query('ROLLBACK');
      client?.release();
      client = undefined;
    },
  };
};

type Engine = {
  name: string;
  url: () => Promise<{ url: string; drop(): Promise<void> }>;
  gate: () => Gate;
};
const engines: Engine[] = [
  {
    name: 'sqlite',
    url: async () => {
      const dir = tempDir();
      return { url: `sqlite:${join(dir, 'issuer.db')}`, drop: async () => removeDir(dir) };
    },
    gate: sqliteGate,
  },
];
if (await postgresAvailable('the bulk status crash test on PostgreSQL'))
  engines.push({ name: 'postgres', url: () => createTempDatabase(), gate: postgresGate });

// docs/operations.md "Bulk status changes": one job revokes every credential of a schema; the
// real server process running it is SIGKILLed mid-job and started again on the same database; the
// job ends with every credential revoked exactly once in the audit, and the published status lists
// and /revocation-status agree with the records.
describe.each(engines)('a bulk revocation survives a SIGKILL mid-job ($name)', ({ url, gate: makeGate }) => {
  let database: { url: string; drop(): Promise<void> };
  let emulator: EmulatorServer;
  let store: OpenedStore;
  const dir = tempDir();
  const instances: InstanceProcess[] = [];
  const gate = makeGate();
  const env = { STATUS_JOB_LEASE_MS: '2000', OUTBOX_SWEEP_MS: '200', REDIS_URL: '' };

  beforeAll(async () => {
    database = await url();
    emulator = await startEmulatorServer({ partnerId: TEST_PARTNER_ID, jwks: async () => ({ keys: [] }) });
    const target = parseDatabaseUrl(database.url, process.cwd());
    if (typeof target === 'string') throw new Error(target);
    store = await openStore(target, { poolMax: 4 });
    // Recorded through the store's own insert, as issuances are (no signing: the job never reads
    // a credential, only its record and slot).
    await seedIssuances(store, SIZE, { schemaId: SCHEMA, partitionSize: PARTITION_SIZE, bits: 1 });
  });

  afterAll(async () => {
    await stopInstanceProcesses(instances);
    await gate.release(store).catch(() => undefined);
    await store?.close();
    await emulator?.close();
    await database?.drop();
    removeDir(dir);
  });

  it('finishes after a restart, each credential revoked once', async () => {
    const start = () =>
      startInstanceProcess({ databaseUrl: database.url, serviceUrl: emulator.url, dir, env });
    const first = await start();
    instances.push(first);
    const selector = { schemaId: SCHEMA };
    const dry = (await (
      await admin(first.url, '/admin/status-changes', {
        change: 'revoke',
        selector,
        reason: 'crash test',
        dryRun: true,
      })
    ).json()) as { count: number };
    expect(dry.count).toBe(SIZE);
    await gate.arm(store);
    const started = await admin(first.url, '/admin/status-changes', {
      change: 'revoke',
      selector,
      reason: 'crash test',
    });
    expect(started.status).toBe(202);
    const { jobId, count } = (await started.json()) as { jobId: string; count: number };
    expect(count).toBe(dry.count);

    // Killed with the job under way and held before its end.
    await gate.held(store);
    const seen = (await (await admin(first.url, `/admin/status-changes/${jobId}`)).json()) as Job;
    expect(seen.state).toBe('running');
    expect(seen.done).toBeGreaterThan(0);
    expect(seen.done).toBeLessThan(SIZE);
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    expect(isAlive(first)).toBe(false);
    await gate.release(store);

    const second = await start();
    instances.push(second);
    let job: Job | undefined;
    await expect
      .poll(async () => {
        job = (await (await admin(second.url, `/admin/status-changes/${jobId}`)).json()) as Job;
        return job.state;
      })
      .toBe('done');
    expect(job).toMatchObject({ total: SIZE, done: SIZE, failed: 0 });
    expect(second.output.join('\n')).toContain('status_job_resumed');

    const left = await queryStore<{ n: number }>(
      store,
      'SELECT COUNT(*) AS n FROM issuances WHERE schema_id = ? AND status <> 1',
      [SCHEMA],
    );
    expect(Number(left[0]!.n)).toBe(0);
    const audit = await queryStore<{ entries: number; targets: number }>(
      store,
      "SELECT COUNT(*) AS entries, COUNT(DISTINCT target) AS targets FROM audit_log WHERE job_id = ? AND action = 'revoke'",
      [jobId],
    );
    expect(Number(audit[0]!.entries)).toBe(SIZE);
    expect(Number(audit[0]!.targets)).toBe(SIZE);

    // The published lists agree with the records, bit for bit.
    const slots = await queryStore<{
      revocation_nonce: number;
      status_partition: number;
      status_index: number;
    }>(store, 'SELECT revocation_nonce, status_partition, status_index FROM issuances WHERE schema_id = ?', [
      SCHEMA,
    ]);
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
