import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { JWK } from 'jose';
import pg from 'pg';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { createTempDatabase } from '../../test/helpers/services.js';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';
import { percentile, post, startChild } from './hosted.js';
import type { Row } from './issuance.js';
import { type BenchServer, backendCpuMs, processTreeCpuMs, startBenchServer } from './server.js';
import { benchStoreSpread } from './store-engines.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..');
const OPERATOR_KEY = 'bench-operator-key-0123456789abcdef0123456789';
const CONCURRENCY = 32;

/** Where a request goes: the host that names the tenant (none: a single deployment) and its key. */
interface Door {
  host: string | undefined;
  apiKey: string;
}

/** Resident memory of a process, in kB, from /proc (Linux). */
function rssKb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? Number.NaN);
}

/** One request on `agent`, as for `host`; its status and JSON body. */
function call(
  agent: Agent,
  url: string,
  options: { method?: string; host?: string | undefined; headers?: Record<string, string>; body?: unknown },
  // biome-ignore lint/suspicious/noExplicitAny: a few fields of several routes' answers are read; a wrong shape fails the run
): Promise<{ status: number; json: any }> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((done, fail) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        agent,
        headers: {
          ...(options.host ? { host: options.host } : {}),
          ...(body
            ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }
            : {}),
          ...options.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = text;
          }
          done({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

const tenantId = (n: number) => `t${n}`;
const door = (n: number): Door => ({
  host: `${tenantId(n)}.bench.test`,
  apiKey: `bench-api-key-${n}-0123456789abcdef0123456789`,
});

/**
 * `npm run bench -- tenants` (docs/benchmarks.md "Several issuers"): BENCH_TENANTS (1,000) tenants in
 * one TENANCY=multi process on SQLite, added through the operator route; its start-up with them
 * until it listens, its memory per tenant; hosted issue-vc spread over every tenant beside the same
 * load on a single deployment, both processes up, windows alternated (BENCH_TENANTS_ROUNDS): server
 * CPU per issuance, multi ÷ single; and a tenant added to the running process until its first
 * hosted issuance is answered. Both issue membership-v1 as SD-JWT VC with claims from the bench's
 * claims server, upload to one emulator process, one process each (WORKERS=1).
 * BENCH_TENANTS_STORE=postgres puts each process on a database of its own on BENCH_DATABASE_URL
 * (the tenants' schemas in one), and counts its backends' CPU with the process's.
 */
export async function benchTenants(): Promise<Row[]> {
  const count = Number(process.env.BENCH_TENANTS || 1000);
  const rounds = Number(process.env.BENCH_TENANTS_ROUNDS || 3);
  const seconds = Number(process.env.BENCH_SECONDS || 8);
  const engine = process.env.BENCH_TENANTS_STORE || 'sqlite';
  if (engine !== 'sqlite' && engine !== 'postgres')
    throw new Error(`BENCH_TENANTS_STORE: sqlite or postgres, not ${engine}`);
  const dir = tempDir();
  const closers: Array<() => Promise<void>> = [];
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  closers.push(async () => agent.destroy());
  const rows: Row[] = [];
  try {
    // Every issuer's partner keys in one JWKS for the one emulator: the single deployment's and each tenant's.
    const partnerKeys: JWK[] = [];
    const jwksServer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: partnerKeys }));
    });
    jwksServer.listen(0, '127.0.0.1');
    await once(jwksServer, 'listening');
    closers.push(() => new Promise<void>((r) => jwksServer.close(() => r())));
    const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;
    const emulator = await startChild(
      ['scripts/emulator.ts'],
      { EMULATOR_PORT: '0', EMULATOR_JWKS_URL: jwksUrl },
      /SERVICE_V1_BASE_URL=(\S+)/,
    );
    closers.push(emulator.close);
    const claims = await startChild(['scripts/bench/claims-server.ts'], {}, /listening on (\S+)/);
    closers.push(claims.close);

    // membership-v1 as SD-JWT VC alone (no Iden3 identity per tenant), claims from the claims server.
    const schemasDir = join(dir, 'schemas');
    mkdirSync(schemasDir);
    const schema = JSON.parse(readFileSync(join(ROOT, 'schemas/membership-v1.json'), 'utf8'));
    schema.proofTypes = ['SD_JWT_VC'];
    delete schema.iden3;
    schema.claims = { provider: 'http', url: claims.url, timeoutMs: 5000 };
    writeFileSync(join(schemasDir, 'membership-v1.json'), JSON.stringify(schema));
    const common = {
      RATE_LIMIT_HOLDER_PER_MIN: '0',
      RATE_LIMIT_ADMIN_PER_MIN: '0',
      SCHEMAS_DIR: schemasDir,
      SERVICE_V1_BASE_URL: emulator.url,
      WORKERS: '1',
    };

    // Each process's database: its SQLite file(s) in its folder, or a PostgreSQL database of its own.
    const databaseOf = async (folder: string, file: string): Promise<string> => {
      if (engine === 'sqlite') return `sqlite:${join(folder, file)}`;
      const db = await createTempDatabase(process.env.BENCH_DATABASE_URL || undefined);
      closers.push(db.drop);
      return db.url;
    };
    /** The CPU (ms) a process has used so far, and its PostgreSQL backends'. */
    const cpuOf = (server: BenchServer, databaseUrl: string) => ({
      process: processTreeCpuMs(server.child.pid!)!,
      backends: databaseUrl.startsWith('postgres')
        ? backendCpuMs(new URL(databaseUrl).pathname.slice(1))
        : new Map<string, number>(),
    });
    /**
     * The backends' CPU between two readings, process by process: one that ended before the second
     * reading is left out, one started since counts from zero.
     */
    const backendsBetween = (before: Map<string, number>, after: Map<string, number>) =>
      [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0);

    const singleDir = join(dir, 'single');
    mkdirSync(singleDir);
    const singleDatabase = await databaseOf(singleDir, 'issuer.db');
    // BENCH_CPU_PROF=<dir>: each process writes a V8 CPU profile on exit, in <dir>/single and <dir>/multi.
    const profiling = (side: string) =>
      process.env.BENCH_CPU_PROF
        ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROF, side)}`]
        : [];
    const single = await startBenchServer(
      { ...common, DATABASE_URL: singleDatabase },
      { dir: singleDir, nodeArgs: profiling('single') },
    );
    closers.push(() => single.close());
    partnerKeys.push(...(await call(agent, `${single.url}/.well-known/jwks.json`, {})).json.keys);

    const multiDir = join(dir, 'multi');
    mkdirSync(multiDir);
    const multiEnv = {
      ...common,
      TENANCY: 'multi',
      OPERATOR_API_KEY: OPERATOR_KEY,
      KEYS_DIR: join(multiDir, 'keys'),
      DATABASE_URL: await databaseOf(multiDir, 'deployment.db'),
    };
    const startMulti = () =>
      startBenchServer(multiEnv, { dir: multiDir, devSecrets: false, nodeArgs: profiling('multi') });
    let multi: BenchServer = await startMulti();
    const stopMulti = async () => {
      if (multi.child.exitCode === null && multi.child.signalCode === null) {
        multi.child.kill('SIGTERM');
        await once(multi.child, 'exit');
      }
    };
    closers.push(stopMulti);
    const rssEmpty = rssKb(multi.child.pid!);
    const operator = { 'x-operator-api-key': OPERATOR_KEY };
    const add = async (n: number) => {
      const res = await call(agent, `${multi.url}/operator/tenants`, {
        method: 'POST',
        headers: operator,
        body: {
          id: tenantId(n),
          origin: `https://${door(n).host}`,
          settings: { partnerId: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11' },
          apiKey: door(n).apiKey,
          adminApiKeys: { admin: `bench-admin-key-${n}-0123456789abcdef01234567` },
        },
      });
      if (res.status !== 201)
        throw new Error(`adding tenant ${n}: ${res.status} ${JSON.stringify(res.json)}`);
      const keys = await call(agent, `${multi.url}/.well-known/jwks.json`, { host: door(n).host });
      partnerKeys.push(...keys.json.keys);
    };
    process.stdout.write(`  adding ${count} tenants…\n`);
    const addStart = performance.now();
    for (let n = 1; n <= count; n++) await add(n);
    const addMs = performance.now() - addStart;

    // Start-up with the tenants: from spawning the process to its listening line (every tenant built).
    await stopMulti();
    multi = await startMulti();
    const ready = await call(agent, `${multi.url}/readyz`, {});
    // `failing` is a count (docs/several-issuers.md "Routing").
    if (ready.status !== 200 || ready.json.tenants !== count || ready.json.failing !== 0)
      throw new Error(`after restart: ${JSON.stringify(ready.json)}`);
    const rssFull = rssKb(multi.child.pid!);
    rows.push(
      {
        name: `tenants: ${count} added through the operator route, per tenant`,
        value: addMs / count,
        unit: 'ms',
      },
      { name: `tenants: start-up with ${count} tenants until listening`, value: multi.startMs, unit: 'ms' },
      { name: 'tenants: resident memory, no tenant', value: rssEmpty / 1024, unit: 'MB' },
      { name: `tenants: resident memory, ${count} tenants`, value: rssFull / 1024, unit: 'MB' },
      { name: 'tenants: resident memory per tenant', value: (rssFull - rssEmpty) / count, unit: 'kB' },
    );

    // Hosted issue-vc, the single deployment and the tenants (round robin) alternated.
    const holder = generateHolderKeyPair('x25519');
    let counter = 0;
    // Before each window on PostgreSQL, both databases vacuumed and analysed, as autovacuum keeps
    // a production server's tables (a server with it off would let the single deployment's one set
    // of tables, which takes every issuance, bloat window after window while each tenant's take a
    // hundredth: the ratio would then measure the bloat).
    const vacuum = async () => {
      if (engine !== 'postgres') return;
      for (const url of [singleDatabase, multiEnv.DATABASE_URL]) {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          await client.query('VACUUM (ANALYZE)');
        } finally {
          await client.end();
        }
      }
    };
    /** Hosted issuances on `doors` in turn for `ms`, or (`requests`) until that many were sent. */
    const window = async (
      server: BenchServer,
      doors: Door[],
      ms: number,
      requests = Number.POSITIVE_INFINITY,
    ) => {
      await vacuum();
      const target = new URL(`${server.url}/issue-vc`);
      let ok = 0;
      let failures = 0;
      const latencies: number[] = [];
      const end = performance.now() + ms;
      const databaseUrl = server === single ? singleDatabase : multiEnv.DATABASE_URL;
      const cpu0 = cpuOf(server, databaseUrl);
      const start = performance.now();
      let sent = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (performance.now() < end && sent++ < requests) {
            const n = counter++;
            const d = doors[n % doors.length]!;
            const body = JSON.stringify({
              holderDID: `did:example:bench-${n}`,
              pubKey: holder.publicKeyHex,
              userId: 'demo-user-1',
              schemaId: 'membership-v1',
            });
            const t0 = performance.now();
            const status = await post(agent, target, body, {
              ...(d.host ? { host: d.host } : {}),
              'content-type': 'application/json',
              'content-length': String(Buffer.byteLength(body)),
              'x-api-key': d.apiKey,
            });
            latencies.push(performance.now() - t0);
            if (status === 201) ok++;
            else failures++;
          }
        }),
      );
      const elapsed = (performance.now() - start) / 1000;
      const cpu1 = cpuOf(server, databaseUrl);
      const backends = backendsBetween(cpu0.backends, cpu1.backends);
      latencies.sort((x, y) => x - y);
      return {
        ok,
        failures,
        perS: ok / elapsed,
        p99: percentile(latencies, 99),
        cpu: (cpu1.process - cpu0.process + backends) / Math.max(1, ok),
        backends: backends / Math.max(1, ok),
      };
    };
    const sides = {
      single: { server: single, doors: [{ host: undefined, apiKey: single.apiKey }] },
      multi: { server: multi, doors: Array.from({ length: count }, (_, i) => door(i + 1)) },
    };
    // Warm-up, counted rather than timed and the same on both sides: JIT, keep-alive sockets, and
    // every tenant's first issuances (its status list, its pools, its statements), each tenant
    // asked twice however slowly those first ones go, so that none falls in a measured window.
    const warmUp = Math.max(2000, 2 * count);
    for (const side of Object.values(sides))
      await window(side.server, side.doors, Number.POSITIVE_INFINITY, warmUp);
    const cpu: Record<keyof typeof sides, number[]> = { single: [], multi: [] };
    for (let round = 1; round <= rounds; round++)
      for (const name of round % 2 ? (['single', 'multi'] as const) : (['multi', 'single'] as const)) {
        const got = await window(sides[name].server, sides[name].doors, seconds * 1000);
        const tag = `tenants: hosted issue-vc, ${name === 'single' ? 'single deployment' : `${count} tenants`} #${round}`;
        rows.push(
          { name: `${tag}: issuances/s at ${CONCURRENCY} in flight`, value: got.perS, unit: '/s' },
          { name: `${tag}: p99 latency`, value: got.p99, unit: 'ms' },
          { name: `${tag}: non-201 answers`, value: got.failures, unit: '' },
          { name: `${tag}: server CPU per issuance`, value: got.cpu, unit: 'ms' },
          ...(engine === 'postgres'
            ? [{ name: `${tag}: of which PostgreSQL backends`, value: got.backends, unit: 'ms' }]
            : []),
        );
        cpu[name].push(got.cpu);
      }
    const median = (v: number[]) => {
      const s = [...v].sort((x, y) => x - y);
      return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
    };
    rows.push(
      {
        name: 'tenants: server CPU per issuance, single deployment (median)',
        value: median(cpu.single),
        unit: 'ms',
      },
      {
        name: `tenants: server CPU per issuance, ${count} tenants (median)`,
        value: median(cpu.multi),
        unit: 'ms',
      },
      {
        name: `tenants: server CPU per issuance, ${count} tenants ÷ single (goal ≤ 1.1)`,
        value: median(cpu.multi) / median(cpu.single),
        unit: '×',
      },
    );

    // What the tenants cost while nothing is asked of them: their sweeps, looks and key polls.
    const idleMs = 10_000;
    const idle0 = cpuOf(multi, multiEnv.DATABASE_URL);
    await new Promise((done) => setTimeout(done, idleMs));
    const idle1 = cpuOf(multi, multiEnv.DATABASE_URL);
    const idleCpu = idle1.process - idle0.process + backendsBetween(idle0.backends, idle1.backends);
    rows.push({
      name: `tenants: ${count} tenants asked nothing for ${idleMs / 1000} s, server CPU per second`,
      value: (idleCpu * 1000) / idleMs,
      unit: 'ms',
    });

    // A tenant added to the running process until its first hosted issuance is answered (201).
    const next = count + 1;
    const addedAt = performance.now();
    await add(next);
    const first = await call(agent, `${multi.url}/issue-vc`, {
      method: 'POST',
      host: door(next).host,
      headers: { 'x-api-key': door(next).apiKey },
      body: {
        holderDID: 'did:example:bench-new-tenant',
        pubKey: holder.publicKeyHex,
        userId: 'demo-user-1',
        schemaId: 'membership-v1',
      },
    });
    if (first.status !== 201)
      throw new Error(`the new tenant's first issuance: ${first.status} ${JSON.stringify(first.json)}`);
    rows.push({
      name: 'tenants: a tenant added, until its first hosted issuance is answered',
      value: performance.now() - addedAt,
      unit: 'ms',
    });
    // Last, so that the files it writes and removes leave the servers' windows alone: what the
    // engine alone adds when the same writes are spread over a file per tenant.
    if (engine === 'sqlite') rows.push(...(await benchStoreSpread(count)));
    return rows;
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    removeDir(dir);
  }
}
