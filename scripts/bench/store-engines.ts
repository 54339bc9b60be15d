import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { randomRevocationNonce } from '../../src/issuance/issuance-identity.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { NewIssuance, Store } from '../../src/store/store.js';
import { newWebhookEventId } from '../../src/store/webhook-store.js';
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

async function run(
  store: Store,
  serverCpuMs: () => number,
): Promise<{ perSecond: number; cpuMsPer: number; serverMsPer: number }> {
  for (let i = 0; i < 200; i++) await issueAndUpload(store); // warm-up: connections, plans, JIT
  const cpu0 = process.cpuUsage();
  const server0 = serverCpuMs();
  const t0 = performance.now();
  let left = COUNT;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await issueAndUpload(store);
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const serverMs = serverCpuMs() - server0;
  const totalCpuMs = (cpu.user + cpu.system) / 1000 + serverMs;
  return { perSecond: (COUNT / ms) * 1000, cpuMsPer: totalCpuMs / COUNT, serverMsPer: serverMs / COUNT };
}

export async function benchStoreEngines(): Promise<Row[]> {
  const dir = join(tmpdir(), `issuer-bench-${randomBytes(4).toString('hex')}`);
  const sqlite = openSqliteStore(join(dir, 'issuer.db'));
  const onSqlite = await run(sqlite, () => 0);
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
    const onPostgres = await run(store, serverCpuMs);
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
