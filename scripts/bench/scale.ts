import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import type pg from 'pg';
import { copyDatabase } from '../../src/store/copy-database.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { backupSqlite } from '../../src/store/sqlite/backup.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import type { HistoryQuery, NewIssuance, Store } from '../../src/store/store.js';
import { createTempDatabase, type TempDatabase } from '../../test/helpers/services.js';
import { benchHostedIssueVc } from './hosted.js';
import type { Row } from './issuance.js';
import type { BenchServer } from './server.js';

/**
 * The kit as its tables grow (docs/benchmarks.md "As the data grows"): for each size of
 * `BENCH_SCALE_ROWS` on SQLite (default 10000,300000) and of `BENCH_SCALE_POSTGRES_ROWS` on
 * PostgreSQL (default 300000; empty: none), issuances recorded through the store's own insert and
 * "uploaded" mark (group commit, envelopes of a real credential's size), then: bytes per 1,000
 * issuances, admin history by cursor (first and last page, each filter), and against the issuer
 * started on that database: start-up until ready, hosted issue-vc p50/p99 and CPU, a revocation
 * until the served status list shows it, publishing every partition, doctor, and on SQLite backup
 * and `db copy` to PostgreSQL.
 */
const sizes = (value: string | undefined, fallback: string) =>
  (value ?? fallback)
    .split(',')
    .filter(Boolean)
    .map(Number)
    .filter((n) => n > 0);
const SQLITE_SIZES = sizes(process.env.BENCH_SCALE_ROWS, '10000,300000');
const POSTGRES_SIZES = sizes(process.env.BENCH_SCALE_POSTGRES_ROWS, '300000');
const ROOT = resolve(fileURLToPath(import.meta.url), '../../..');
const T0 = Date.parse('2030-01-01T00:00:00Z');
const MINUTE = 60_000;
export const PARTITION_SIZE = 131_072;
// An SD-JWT VC of the shipped schema is about 1.6 KB; its envelope's ciphertext, base64, about 2.2 KB.
const CIPHERTEXT_BYTES = 1650;

export function issuance(i: number, createdAtMs = T0 + i * MINUTE): NewIssuance {
  const credentialId = randomUUID();
  const createdAt = new Date(createdAtMs);
  // Valid for 30 days: a table of years holds mostly expired credentials.
  const expiresAt = new Date(createdAt.getTime() + 30 * 86_400_000);
  return {
    credentialId,
    channel: i % 20 === 0 ? 'direct' : 'hosted',
    userId: `user-${i}`,
    holderDid: `did:example:holder-${i % 5000}`,
    schemaId: i % 3 === 0 ? 'kyc-v1' : 'membership-v1',
    proofType: i % 10 === 0 ? 'BJJ_SIG_2021' : 'SD_JWT_VC',
    revocationNonce: i + 1,
    statusSlot: { partition: Math.floor(i / PARTITION_SIZE), index: i % PARTITION_SIZE },
    subjectHash: credentialId,
    kid: 'bench',
    createdAt,
    expiresAt,
    ...(i % 20 === 0 ? { emailHash: `hash-${i % 400}` } : {}),
    envelope: {
      holderDid: `did:example:holder-${i % 5000}`,
      schemaId: 'membership-v1',
      expiresAt: expiresAt.toISOString(),
      data: randomBytes(CIPHERTEXT_BYTES).toString('base64'),
      iv: randomBytes(12).toString('base64'),
      authTag: randomBytes(16).toString('base64'),
      encryptedKey: randomBytes(44).toString('base64'),
      externalId: credentialId,
    },
  };
}

/** What the database takes (after a checkpoint, or a VACUUM), in bytes. */
export interface Footprint {
  /** SQLite: the file and its WAL; PostgreSQL: every table of the issuances and their envelopes. */
  total: number;
  /** The issuances table with its indexes (and, on PostgreSQL, its TOAST). */
  issuances: number;
  /** The envelopes not yet delivered (issuance_envelopes, with its index), and how many. */
  envelopes: number;
  envelopeRows: number;
  /** Issuances recorded. */
  rows: number;
}

export interface Target {
  engine: 'SQLite' | 'PostgreSQL';
  url: string;
  store: Store;
  /** Runs statements with no parameters. */
  exec(sql: string): Promise<void>;
  bytes(): Promise<Footprint>;
  /**
   * PostgreSQL: what autovacuum does to the envelope table about once a minute (autovacuum_naptime),
   * making the room of deleted envelopes reusable; until it runs, new envelopes take new room.
   * Seeding records a minute's issuances in seconds, so it calls this every SEED_PER_MINUTE.
   */
  autovacuum?(): Promise<void>;
  close(): Promise<void>;
}

// A minute of one instance at about 170 hosted issuances/s (what this kit's hosted bench reaches
// on PostgreSQL on a small machine): the envelope table then peaks at about this many rows.
const SEED_PER_MINUTE = 10_000;

export async function sqliteTarget(dir: string): Promise<Target> {
  const file = join(dir, 'issuer.db');
  const store: SqliteStore = openSqliteStore(file);
  const fileSize = (f: string) => (existsSync(f) ? statSync(f).size : 0);
  const count = (table: string) =>
    (store.db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
  // A table's b-tree and its indexes' (dbstat: every page of the file, by b-tree).
  const tableBytes = store.db.prepare<[string], { n: number | null }>(
    `SELECT SUM(d.pgsize) AS n FROM dbstat d JOIN sqlite_schema s ON s.name = d.name WHERE s.tbl_name = ?`,
  );
  return {
    engine: 'SQLite',
    url: `sqlite:${file}`,
    store,
    exec: async (sql) => void store.db.exec(sql),
    async bytes() {
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      return {
        total: fileSize(file) + fileSize(`${file}-wal`),
        issuances: tableBytes.get('issuances')?.n ?? 0,
        envelopes: tableBytes.get('issuance_envelopes')?.n ?? 0,
        envelopeRows: count('issuance_envelopes'),
        rows: count('issuances'),
      };
    },
    close: async () => store.close(),
  };
}

async function postgresTarget(db: TempDatabase): Promise<Target> {
  const store: PostgresStore = await openPostgresStore(db.url, { poolMax: 10 });
  const vacuum = async (tables: string[]) => {
    // VACUUM may rightly take longer than the store's statement bound: a connection without it.
    const client = await store.pool.connect();
    try {
      await client.query('SET statement_timeout = 0');
      for (const table of tables)
        await client.query({ text: `VACUUM ${table}`, query_timeout: 0 } as pg.QueryConfig);
      await client.query('RESET statement_timeout');
    } finally {
      client.release();
    }
  };
  const size = async (table: string) =>
    Number(
      (await store.pool.query<{ n: string }>('SELECT pg_total_relation_size($1) AS n', [table])).rows[0]!.n,
    );
  return {
    engine: 'PostgreSQL',
    url: db.url,
    store,
    exec: async (sql) => void (await store.pool.query(sql)),
    autovacuum: () => vacuum(['issuance_envelopes']),
    async bytes() {
      await vacuum(['issuances', 'issuance_envelopes']);
      const issuances = await size('issuances');
      const envelopes = await size('issuance_envelopes');
      const count = async (table: string) =>
        (await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
      return {
        total: issuances + envelopes,
        issuances,
        envelopes,
        envelopeRows: await count('issuance_envelopes'),
        rows: await count('issuances'),
      };
    },
    close: () => store.close(),
  };
}

/**
 * Records `rows` issuances 500 at a time through the store (the i-th created at `createdAtMs(i)`,
 * default one a minute from 2030), each 500 marked uploaded right after they are recorded, as the
 * outbox does (so the envelopes waiting are never more than 500), but for 0.2% whose upload
 * failed and the newest 50, still pending.
 */
export async function seed(
  t: Target,
  rows: number,
  createdAtMs?: (i: number) => number,
): Promise<{ insertPerS: number; markPerS: number }> {
  const partitions = Math.ceil(rows / PARTITION_SIZE) + 1;
  for (let p = 0; p < partitions; p++)
    await t.exec(
      `INSERT INTO status_list_partitions (partition, size, bits, created_at) VALUES (${p}, ${PARTITION_SIZE}, 2, '2030-01-01T00:00:00Z')`,
    );
  const delivered = (i: number) => i < rows - 50 && (i + 1) % 500 !== 7;
  let insertMs = 0;
  let markMs = 0;
  let marked = 0;
  for (let i = 0; i < rows; i += 500) {
    const chunk = Array.from({ length: Math.min(500, rows - i) }, (_, k) =>
      issuance(i + k, createdAtMs?.(i + k)),
    );
    let t0 = performance.now();
    await Promise.all(
      chunk.map(async (n) => {
        const outcome = await t.store.issuances.insertIssuance(n, { dedupe: false });
        if (outcome.kind !== 'inserted') throw new Error(`seeding: ${outcome.kind}`);
      }),
    );
    insertMs += performance.now() - t0;
    t0 = performance.now();
    const done = chunk.filter((_, k) => delivered(i + k));
    await Promise.all(
      done.map((n) => t.store.issuances.markUploaded(n.credentialId, `/vcs/${n.credentialId}`, new Date())),
    );
    markMs += performance.now() - t0;
    marked += done.length;
    if ((i + 500) % SEED_PER_MINUTE === 0) await t.autovacuum?.();
  }
  const insertPerS = rows / (insertMs / 1000);
  const markPerS = marked / (markMs / 1000);
  // Statuses as a live table has them: 1% revoked, 0.5% suspended; full partitions closed.
  await t.exec(`
    UPDATE issuances SET status = 1, revoked_at = created_at WHERE revocation_nonce % 100 = 0;
    UPDATE issuances SET status = 2, suspended_at = created_at WHERE revocation_nonce % 200 = 1;
    UPDATE issuances SET upload_state = 'failed', next_attempt_at = NULL, lease_until = NULL
      WHERE revocation_nonce % 500 = 7 AND revocation_nonce <= ${rows - 50};
  `);
  const full = Math.floor(rows / PARTITION_SIZE);
  if (t.engine === 'PostgreSQL' && full > 0)
    await t.exec(`UPDATE status_list_partitions SET is_full = true WHERE partition < ${full}`);
  return { insertPerS, markPerS };
}

const FILTERS: Array<[string, Partial<HistoryQuery>]> = [
  ['no filter', {}],
  ['status=valid', { status: 'valid' }],
  ['status=revoked', { status: 'revoked' }],
  ['status=suspended', { status: 'suspended' }],
  ['status=expired', { status: 'expired' }],
  ['status=upload_pending', { status: 'upload_pending' }],
  ['status=upload_failed', { status: 'upload_failed' }],
  ['schemaId', { schemaId: 'kyc-v1' }],
  ['proofType=BJJ_SIG_2021', { proofType: 'BJJ_SIG_2021' }],
  ['holderDid', { holderDid: 'did:example:holder-42' }],
  ['email', { emailHash: 'hash-20' }],
  ['schemaId+status=revoked', { schemaId: 'kyc-v1', status: 'revoked' }],
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function history(t: Target, size: number, label: string): Promise<Row[]> {
  const rows: Row[] = [];
  const now = new Date(T0 + (size - 1000) * MINUTE);
  const base = { limit: 100, order: 'createdAt_desc' as const, now };
  for (const [name, filter] of FILTERS) {
    const first: number[] = [];
    for (let k = 0; k < 5; k++) {
      const t0 = performance.now();
      await t.store.history.list({ ...base, ...filter });
      first.push(performance.now() - t0);
    }
    // Every page by cursor: the slowest page is the one that holds the thread longest.
    const pages: number[] = [];
    let matches = 0;
    let after: HistoryQuery['after'];
    do {
      const t0 = performance.now();
      const page = await t.store.history.list({ ...base, ...filter, after });
      pages.push(performance.now() - t0);
      matches += page.records.length;
      after = page.next ?? undefined;
    } while (after);
    rows.push(
      { name: `${label}: history ${name}, first page`, value: median(first), unit: 'ms' },
      { name: `${label}: history ${name}, last page by cursor`, value: pages[pages.length - 1]!, unit: 'ms' },
      {
        // The rows matched say how full the pages are: a filter whose whole answer is a few rows
        // at one size and full pages at another compares pages of different sizes.
        name: `${label}: history ${name}, median of ${pages.length} pages (${matches} rows)`,
        value: median(pages),
        unit: 'ms',
      },
    );
  }
  return rows;
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const value = await work();
  return [value, performance.now() - t0];
}

/** What the running issuer takes: /readyz, a revocation until its status list shows it, publishing, doctor. */
async function againstServer(server: BenchServer, t: Target, label: string): Promise<Row[]> {
  const admin = (path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-api-key': server.adminApiKey },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const rows: Row[] = [{ name: `${label}: start-up until listening`, value: server.startMs, unit: 'ms' }];
  const [ready, readyMs] = await timed(() => fetch(`${server.url}/readyz`));
  if (ready.status !== 200) throw new Error(`/readyz answered ${ready.status}`);
  rows.push({ name: `${label}: /readyz`, value: readyMs, unit: 'ms' });

  // The newest hosted issuance of the run, revoked; then the served list, until its bit is set.
  const newest = (await (await admin('/admin/issuance-history?limit=1')).json()) as {
    data: Array<{ revocationNonce: string; statusList: { idx: number; uri: string } | null }>;
  };
  const target = newest.data[0];
  if (target?.statusList) {
    const { idx, uri } = target.statusList;
    const t0 = performance.now();
    const revoked = await admin('/admin/revoke', {
      revocationNonce: target.revocationNonce,
      reason: 'bench',
    });
    if (revoked.status !== 200) throw new Error(`revoke answered ${revoked.status}: ${await revoked.text()}`);
    const path = new URL(uri).pathname;
    for (let polls = 0; ; polls++) {
      const token = await (await fetch(`${server.url}${path}`)).text();
      if (getListFromStatusListJWT(token).getStatus(idx) !== 0) break;
      if (polls > 600) throw new Error('the revocation never showed in the status list');
      await new Promise((r) => setTimeout(r, 50));
    }
    rows.push({
      name: `${label}: revoke until the status list shows it`,
      value: performance.now() - t0,
      unit: 'ms',
    });
  }
  const [published, publishMs] = await timed(() => admin('/admin/publish-token-status-list', {}));
  if (published.status !== 200) throw new Error(`publish answered ${published.status}`);
  rows.push({ name: `${label}: publish every partition`, value: publishMs, unit: 'ms' });

  const [, doctorMs] = await timed(async () =>
    spawnSync(process.execPath, ['scripts/launch.mjs', 'scripts/admin.ts', 'doctor'], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'development',
        KEYS_DIR: join(server.dir, 'keys'),
        DATABASE_URL: t.url,
        ISSUER_URL: server.url,
      },
      encoding: 'utf8',
    }),
  );
  rows.push({ name: `${label}: doctor`, value: doctorMs, unit: 'ms' });
  return rows;
}

async function sqliteOnly(t: Target, dir: string, size: number, label: string): Promise<Row[]> {
  const file = t.url.slice('sqlite:'.length);
  const [, backupMs] = await timed(() => backupSqlite(file, join(dir, 'backup.db')));
  const rows: Row[] = [
    { name: `${label}: backup`, value: backupMs, unit: 'ms' },
    {
      name: `${label}: backup file bytes per 1,000 issuances`,
      value: (statSync(join(dir, 'backup.db')).size / size) * 1000,
      unit: 'B',
    },
  ];
  let db: TempDatabase | undefined;
  try {
    db = await createTempDatabase(process.env.BENCH_DATABASE_URL || undefined);
  } catch (err) {
    console.log(`  (db copy skipped: PostgreSQL unreachable, ${(err as Error).message})`);
    return rows;
  }
  try {
    const [, copyMs] = await timed(() => copyDatabase(t.url, db!.url, { cwd: ROOT }));
    rows.push({
      name: `${label}: db copy to PostgreSQL, issuances/s`,
      value: size / (copyMs / 1000),
      unit: '/s',
    });
  } finally {
    await db.drop();
  }
  return rows;
}

async function oneSize(engine: 'SQLite' | 'PostgreSQL', size: number): Promise<Row[]> {
  const label = `scale ${engine} ${size.toLocaleString('en-US')}`;
  const dir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
  const pg =
    engine === 'PostgreSQL'
      ? await createTempDatabase(process.env.BENCH_DATABASE_URL || undefined)
      : undefined;
  const t = pg ? await postgresTarget(pg) : await sqliteTarget(dir);
  try {
    const empty = await t.bytes();
    const started = performance.now();
    const { insertPerS, markPerS } = await seed(t, size);
    process.stdout.write(`  (${label}: seeded in ${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
    const bytes = await t.bytes();
    const delivered = bytes.rows - bytes.envelopeRows;
    const rows: Row[] = [
      { name: `${label}: seeding, issuances recorded/s`, value: insertPerS, unit: '/s' },
      { name: `${label}: seeding, "uploaded" marks/s`, value: markPerS, unit: '/s' },
      {
        name: `${label}: database bytes per 1,000 issuances`,
        value: ((bytes.total - empty.total) / size) * 1000,
        unit: 'B',
      },
      {
        name: `${label}: issuances table, bytes per 1,000 delivered`,
        value: ((bytes.issuances - empty.issuances) / delivered) * 1000,
        unit: 'B',
      },
      ...(await history(t, size, label)),
    ];
    const hosted = await benchHostedIssueVc({
      workers: 1,
      databaseUrl: t.url,
      tag: `${label}: hosted issue-vc`,
      env: { STATUS_LIST_BITS: '2', STATUS_LIST_PARTITION_SIZE: String(PARTITION_SIZE) },
      after: (server) => againstServer(server, t, label),
    });
    rows.push(...hosted);
    if (engine === 'SQLite') rows.push(...(await sqliteOnly(t, dir, size, label)));
    // The envelopes still waiting (the failed and the newest pending uploads), and what their table
    // takes once everything above has run: the backlog's size, not the table's history.
    const end = await t.bytes();
    rows.push(
      { name: `${label}: envelope table at the end, envelopes`, value: end.envelopeRows, unit: '' },
      { name: `${label}: envelope table at the end, bytes`, value: end.envelopes, unit: 'B' },
      {
        name: `${label}: database bytes per 1,000 issuances at the end`,
        value: ((end.total - empty.total) / end.rows) * 1000,
        unit: 'B',
      },
    );
    return rows;
  } finally {
    await t.close();
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each size's figures are printed as soon as they are taken (a long run keeps what it measured). */
export async function benchScale(): Promise<Row[]> {
  const sizesToRun = [
    ...SQLITE_SIZES.map((n) => ['SQLite', n] as const),
    ...POSTGRES_SIZES.map((n) => ['PostgreSQL', n] as const),
  ];
  for (const [engine, size] of sizesToRun)
    for (const r of await oneSize(engine, size))
      console.log(
        `  ${r.name.padEnd(58)} ${(r.value >= 100 ? Math.round(r.value).toLocaleString('en-US') : r.value.toFixed(2)).padStart(12)} ${r.unit}`,
      );
  return [];
}
