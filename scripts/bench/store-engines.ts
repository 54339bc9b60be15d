import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { randomRevocationNonce } from '../../src/issuance/issuance-identity.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { NewIssuance, Store } from '../../src/store/store.js';
import { newWebhookEventId } from '../../src/store/webhook-store.js';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';
import type { Row } from './issuance.js';
import { backendCpuMs, backendsCpuTotalMs } from './server.js';

/**
 * The store's share of a hosted issuance on each engine: propose a slot, record it (with the
 * hosted dedupe; the insert holds the upload's lease, store.ts `uploadDueAt`), mark it uploaded
 * — 32 at a time. CPU is this process plus,
 * on PostgreSQL, the server's backends serving it (read from /proc; same machine). Signing and
 * HTTP are left out: this is what the engine adds, not what an issuance costs.
 */
const COUNT = 3000;
const CONCURRENCY = 32;
const BENCH_DATABASE_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

/** A hosted issuance as the issuance core records it, with its `credential.issued` event. */
function issuance(): NewIssuance {
  const credentialId = randomUUID();
  const createdAt = new Date();
  const expiresAt = new Date(createdAt.getTime() + 86_400_000);
  // A real SD-JWT VC's envelope: about 2.2 KB of base64 ciphertext.
  const blob = randomBytes(1650).toString('base64');
  return {
    credentialId,
    channel: 'hosted',
    userId: 'bench',
    holderDid: `did:example:${credentialId}`,
    schemaId: 'membership-v1',
    proofType: 'SD_JWT_VC',
    revocationNonce: randomRevocationNonce(),
    statusSlot: null,
    subjectHash: credentialId,
    kid: 'bench',
    createdAt,
    expiresAt,
    uploadDueAt: new Date(createdAt.getTime() + 60_000),
    envelope: {
      holderDid: `did:example:${credentialId}`,
      schemaId: 'membership-v1',
      expiresAt: expiresAt.toISOString(),
      data: blob,
      iv: 'aXY=',
      authTag: 'dGFn',
      encryptedKey: blob.slice(0, 344),
      externalId: credentialId,
    },
    // Written only while a webhook endpoint exists (docs/operations.md "Webhooks").
    event: {
      id: newWebhookEventId(),
      type: 'credential.issued',
      data: JSON.stringify({
        credentialId,
        schemaId: 'membership-v1',
        proofType: 'SD_JWT_VC',
        channel: 'hosted',
        holderDid: `did:example:${credentialId}`,
        expiresAt: expiresAt.toISOString(),
      }),
    },
  };
}

/** Propose a slot, record the issuance, mark it uploaded: the store's share of a hosted issuance. */
export async function issueAndUpload(store: Store): Promise<void> {
  for (;;) {
    const slot = await store.issuances.proposeStatusSlot(131072, 1);
    const outcome = await store.issuances.insertIssuance(
      { ...issuance(), statusSlot: slot },
      { dedupe: true },
    );
    if (outcome.kind !== 'inserted') continue;
    const now = new Date();
    await store.issuances.markUploaded(
      outcome.record.credentialId,
      `/vcs/${outcome.record.credentialId}`,
      now,
    );
    return;
  }
}

/**
 * `issueAndUpload` `count` times, `CONCURRENCY` at a time, spread in turn over `stores` (several: a
 * tenant's store each, the load spread over them as over tenants), after a warm-up of two per store
 * and at least 200 (connections, plans, JIT, each store's first status partition).
 */
async function run(
  stores: Store[],
  serverCpuMs: () => number,
  count = COUNT,
): Promise<{ perSecond: number; cpuMsPer: number; serverMsPer: number }> {
  let turn = 0;
  const next = () => stores[turn++ % stores.length]!;
  for (let i = 0; i < Math.max(200, 2 * stores.length); i++) await issueAndUpload(next());
  const cpu0 = process.cpuUsage();
  const server0 = serverCpuMs();
  const t0 = performance.now();
  let left = count;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await issueAndUpload(next());
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const serverMs = serverCpuMs() - server0;
  const totalCpuMs = (cpu.user + cpu.system) / 1000 + serverMs;
  return { perSecond: (count / ms) * 1000, cpuMsPer: totalCpuMs / count, serverMsPer: serverMs / count };
}

export async function benchStoreEngines(): Promise<Row[]> {
  const dir = join(tmpdir(), `issuer-bench-${randomBytes(4).toString('hex')}`);
  const sqlite = openSqliteStore(join(dir, 'issuer.db'));
  const onSqlite = await run([sqlite], () => 0);
  await sqlite.close();

  const admin = new pg.Client({ connectionString: BENCH_DATABASE_URL, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch (err) {
    console.log(
      `  PostgreSQL at ${BENCH_DATABASE_URL} unreachable (${(err as Error).message}): engine comparison skipped`,
    );
    return [
      { name: 'store: SQLite issue+uploaded/s', value: onSqlite.perSecond, unit: '/s' },
      { name: 'store: SQLite CPU per issuance', value: onSqlite.cpuMsPer, unit: 'ms' },
    ];
  }
  const name = `issuer_bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(BENCH_DATABASE_URL);
  url.pathname = `/${name}`;
  let postgres: PostgresStore | undefined;
  try {
    postgres = await openPostgresStore(url.toString(), { poolMax: 10 });
    const store = postgres;
    // Fill the pool so that every backend serving the run exists before CPU is first read.
    await Promise.all(Array.from({ length: 10 }, () => store.pool.query('SELECT pg_sleep(0.05)')));
    const backends = backendCpuMs(name);
    if (backends.size === 0) throw new Error('the PostgreSQL server processes are not visible in /proc here');
    const serverCpuMs = () => backendsCpuTotalMs(name);
    const onPostgres = await run([store], serverCpuMs);
    return [
      { name: 'store: SQLite issue+uploaded/s', value: onSqlite.perSecond, unit: '/s' },
      { name: 'store: PostgreSQL issue+uploaded/s', value: onPostgres.perSecond, unit: '/s' },
      { name: 'store: SQLite CPU per issuance', value: onSqlite.cpuMsPer, unit: 'ms' },
      {
        name: 'store: PostgreSQL CPU per issuance (client + backends)',
        value: onPostgres.cpuMsPer,
        unit: 'ms',
      },
      {
        name: 'store: PostgreSQL CPU per issuance, backends only',
        value: onPostgres.serverMsPer,
        unit: 'ms',
      },
      {
        name: 'store: PostgreSQL ÷ SQLite CPU per issuance',
        value: onPostgres.cpuMsPer / onSqlite.cpuMsPer,
        unit: '×',
      },
    ];
  } finally {
    await postgres?.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/**
 * The store's share of a hosted issuance (`issueAndUpload`, no signing, no HTTP) on one SQLite file,
 * and the same load spread in turn over `files` files, a tenant's each, as `npm run bench -- tenants`
 * spreads its issuances (docs/benchmarks.md "Several issuers"): what the engine alone adds when the
 * writes of a turn no longer share a file (one commit each, pages of their own), in this process.
 */
export async function benchStoreSpread(files: number): Promise<Row[]> {
  const dir = tempDir();
  const measure = async (n: number) => {
    const stores = Array.from({ length: n }, (_, i) => openSqliteStore(join(dir, `${n}`, `t${i}.db`)));
    try {
      return await run(stores, () => 0, Math.max(COUNT, 6 * n));
    } finally {
      for (const store of stores) await store.close();
    }
  };
  try {
    const one = await measure(1);
    const spread = await measure(files);
    return [
      { name: "tenants: the store's share of an issuance, one SQLite file", value: one.cpuMsPer, unit: 'ms' },
      {
        name: `tenants: the store's share of an issuance, spread over ${files} files`,
        value: spread.cpuMsPer,
        unit: 'ms',
      },
      {
        name: `tenants: the store's share, ${files} files ÷ one`,
        value: spread.cpuMsPer / one.cpuMsPer,
        unit: '×',
      },
    ];
  } finally {
    removeDir(dir);
  }
}
