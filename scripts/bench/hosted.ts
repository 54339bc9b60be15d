import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { loadKeyRing } from '../../src/keys/key-ring.js';
import { openKeyBackend } from '../../src/keys/open-key-backend.js';
import { processToken } from '../../test/helpers/softhsm.js';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';
import type { Row } from './issuance.js';
import {
  type BenchServer,
  backendCpuMs,
  mainThreadCpuMs,
  processTreeCpuMs,
  startBenchServer,
} from './server.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..');

/** A helper process (emulator, claims source) started from the repository, with the URL it prints. */
export async function startChild(
  args: string[],
  env: Record<string, string>,
  pattern: RegExp,
): Promise<{ url: string; child: ChildProcess; close(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`)));
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      const m = pattern.exec(out);
      if (m) resolve(m[1]!);
    });
  });
  child.stdout!.resume();
  return {
    url,
    child,
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    },
  };
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * One POST on a keep-alive socket. The issuer closes a socket idle for its keep-alive timeout (5 s,
 * Node's default), and a request written on it as it closes meets a reset before any answer: the
 * server never read it, so it is sent again once on a new socket (nodejs.org/api/http.html,
 * `request.reusedSocket`). Such an idle socket is one whose warm-up request ended long before the
 * slowest one did, on a loaded machine.
 */
export function post(agent: Agent, url: URL, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (req.reusedSocket && err.code === 'ECONNRESET')
        post(agent, url, body, headers).then(resolve, reject);
      else reject(err);
    });
    req.end(body);
  });
}

/**
 * Hosted SD-JWT `POST /issue-vc` as production runs it: the issuer (`src/main.ts` with `WORKERS`)
 * in one process tree, the hosting-service emulator in its own process, claims from an `http`
 * source in a third; the load (keep-alive, `concurrency` in flight, a new holder per request so
 * every request signs) comes from this process. Server CPU is the issuer's process tree only.
 */
export async function benchHostedIssueVc(
  options: {
    workers?: number;
    seconds?: number;
    concurrency?: number;
    /** A PostgreSQL database for the issuer (default: SQLite in the bench's folder). */
    databaseUrl?: string;
    /**
     * Run `scripts/bench/floor-server.ts` (the parts alone) in place of the issuer, with these of
     * the kit's layers put back (its `FLOOR_WITH`; '' for none).
     */
    floor?: string;
    /**
     * Webhooks with and without one endpoint, side by side in this one issuer: `rounds` times a
     * window without an endpoint, then one with an endpoint registered for every event type and a
     * receiver in this process answering 204 (removed again after it). Each "with" window's CPU
     * reading waits until every issuance of the window has reached the receiver
     * (credential.issued and credential.delivered), so it holds their deliveries. Rows are named
     * `… webhooks off #N` and `… webhooks on #N`.
     */
    webhookRounds?: number;
    /**
     * `pkcs11`: the issuer's keys made in a SoftHSM2 token and every signature made there
     * (KEY_BACKEND=pkcs11); `software` the default key files. Unset: no key tag.
     */
    keyBackend?: 'software' | 'pkcs11';
    /** The rows' name prefix (default: `hosted issue-vc …` from the options). */
    tag?: string;
    /** More environment for the issuer. */
    env?: Record<string, string>;
    /**
     * Another checkout of the kit to run as the issuer (its `scripts/launch.mjs src/main.ts`, its
     * own source; default this one). The emulator, claims server and schemas stay this checkout's.
     */
    kitDir?: string;
    /**
     * The issuer's key folder, made on first use and kept (default: a new one per run). Runs on one
     * database share it: the database records the Iden3 identity of the keys that first used it.
     */
    keysDir?: string;
    /** More figures taken from the running issuer after the hosted run, before it stops. */
    after?: (server: BenchServer) => Promise<Row[]>;
    /**
     * Other load on the issuer during the measured window: started just before it, after the
     * warm-up; the function it answers ends that load once the window is over and gives its figures.
     */
    beside?: (server: BenchServer) => Promise<() => Promise<Row[]>>;
    /**
     * With `beside`: this many rounds of two windows in this one issuer, one alone, then one beside
     * that load, so that the machine's other load weighs on both alike. Rows are named
     * `… alone #N` and `… beside #N` (issuances/s, p50, p99, non-201 answers), then what `beside`
     * gave for that window. Unset: one window, beside the load.
     */
    besideRounds?: number;
  } = {},
): Promise<Row[]> {
  const workers = options.workers ?? 1;
  let seconds = options.seconds ?? 8;
  const concurrency = options.concurrency ?? 32;
  const tag =
    options.tag ??
    (options.floor !== undefined
      ? `hosted floor, parts alone${options.floor ? ` + ${options.floor}` : ''}`
      : `hosted issue-vc${options.databaseUrl ? ' PostgreSQL' : ''} WORKERS=${workers}${options.keyBackend ? ` keys ${options.keyBackend}` : ''}`);
  const dir = tempDir();
  const closers: Array<() => Promise<void>> = [];
  try {
    // The issuer's keys exist before it starts, so that the emulator can be told its partner keys.
    // One token per bench process: SoftHSM reads SOFTHSM2_CONF when this process first loads it
    // (to make the keys), and the issuer process is handed the same.
    const token = options.keyBackend === 'pkcs11' ? processToken('issuer-kit-bench') : undefined;
    const backend = token
      ? await openKeyBackend(
          { kind: 'pkcs11', module: token.module, token: { label: token.label } },
          token.pin,
        )
      : undefined;
    if (backend) closers.push(() => backend.close());
    const keysDir = options.keysDir ?? join(dir, 'keys');
    const ring = await loadKeyRing(keysDir, { generateIfMissing: true, backend });
    const jwks = JSON.stringify({ keys: ring.partnerKeys.map((k) => k.publicJwk) });
    const jwksServer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
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

    // The shipped schemas, with membership-v1's claims from the claims server.
    const schemasDir = join(dir, 'schemas');
    cpSync(join(ROOT, 'schemas'), schemasDir, { recursive: true });
    const schemaFile = join(schemasDir, 'membership-v1.json');
    const schema = JSON.parse(readFileSync(schemaFile, 'utf8')) as Record<string, unknown>;
    schema.claims = { provider: 'http', url: claims.url, timeoutMs: 5000 };
    writeFileSync(schemaFile, JSON.stringify(schema));

    // One process (WORKERS=1, the floor) outside the webhook windows: the probe watches its loop.
    const loopFile =
      workers === 1 && !options.webhookRounds && !options.keyBackend ? join(dir, 'loop.json') : undefined;
    const server = await startBenchServer(
      {
        RATE_LIMIT_HOLDER_PER_MIN: '0',
        SCHEMAS_DIR: schemasDir,
        SERVICE_V1_BASE_URL: emulator.url,
        WORKERS: String(workers),
        KEYS_DIR: keysDir,
        ...(options.floor ? { FLOOR_WITH: options.floor } : {}),
        ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
        ...(token?.env ?? {}),
        ...(loopFile ? { BENCH_LOOP_FILE: loopFile } : {}),
        ...options.env,
      },
      {
        dir,
        cwd: options.kitDir,
        entry: options.floor !== undefined ? 'scripts/bench/floor-server.ts' : undefined,
        // BENCH_CPU_PROF=<dir>: the issuer writes a V8 CPU profile there on exit (node --cpu-prof).
        nodeArgs: [
          ...(process.env.BENCH_CPU_PROF
            ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
            : []),
          ...(loopFile ? ['--import', LOOP_PROBE] : []),
        ],
      },
    );
    closers.push(() => server.close());
    const hook = options.webhookRounds ? await startReceiver(server) : undefined;
    if (hook) closers.push(hook.close);

    const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
    closers.push(async () => agent.destroy());
    const target = new URL(`${server.url}/issue-vc`);
    const holder = generateHolderKeyPair('x25519');
    let counter = 0;
    let failures = 0;
    /** 201s since the start, warm-up included. */
    let created = 0;
    const one = async (): Promise<number> => {
      const body = JSON.stringify({
        holderDID: `did:example:bench-${counter++}`,
        pubKey: holder.publicKeyHex,
        userId: 'demo-user-1',
        schemaId: 'membership-v1',
      });
      const t0 = performance.now();
      const status = await post(agent, target, body, {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'x-api-key': server.apiKey,
      }).catch((err: Error) => {
        // Whether the issuer is still there tells a crash (its last words are on stderr) from the network.
        const { exitCode, signalCode } = server.child;
        const gone = exitCode !== null || signalCode !== null;
        throw new Error(
          `POST /issue-vc: ${err.message} (${gone ? `the issuer exited: ${exitCode ?? signalCode}` : 'the issuer is running'})`,
        );
      });
      if (status !== 201) failures++;
      else created++;
      return performance.now() - t0;
    };
    const run = async (ms: number): Promise<number[]> => {
      const latencies: number[] = [];
      const end = performance.now() + ms;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < end) latencies.push(await one());
        }),
      );
      return latencies;
    };
    if (process.env.BENCH_SECONDS) seconds = Number(process.env.BENCH_SECONDS);
    // Warm-up: JIT, pools, keep-alive sockets (and the webhook path, with an endpoint).
    await hook?.register();
    await run(2000);
    await hook?.caughtUp(created);
    failures = 0;
    if (options.beside && options.besideRounds) {
      const rows: Row[] = [];
      for (let round = 1; round <= options.besideRounds; round++)
        for (const state of ['alone', 'beside'] as const) {
          failures = 0;
          const stop = state === 'beside' ? await options.beside(server) : undefined;
          const start = performance.now();
          const latencies = await run(seconds * 1000);
          // The holders' window, without the wait for the other load's last operation to end.
          const elapsed = (performance.now() - start) / 1000;
          const besideRows = (await stop?.()) ?? [];
          latencies.sort((a, b) => a - b);
          const name = `${tag} ${state} #${round}`;
          rows.push(
            {
              name: `${name}: issuances/s at ${concurrency} in flight`,
              value: (latencies.length - failures) / elapsed,
              unit: '/s',
            },
            { name: `${name}: p50 latency`, value: percentile(latencies, 50), unit: 'ms' },
            { name: `${name}: p99 latency`, value: percentile(latencies, 99), unit: 'ms' },
            { name: `${name}: non-201 answers`, value: failures, unit: '' },
            ...besideRows,
          );
        }
      return rows;
    }
    if (hook) {
      const rows: Row[] = [];
      const pid = server.child.pid!;
      /** Issuances whose events the receiver is to get: those of the windows with an endpoint. */
      let expected = created;
      for (let round = 1; round <= options.webhookRounds!; round++)
        for (const state of ['off', 'on'] as const) {
          if (state === 'off') await hook.unregister();
          else await hook.register();
          failures = 0;
          const cpu0 = processTreeCpuMs(pid);
          const start = performance.now();
          const latencies = await run(seconds * 1000);
          const elapsed = (performance.now() - start) / 1000;
          const issued = latencies.length - failures;
          if (state === 'on') {
            expected += issued;
            await hook.caughtUp(expected);
          }
          const cpu1 = processTreeCpuMs(pid);
          const name = `${tag} webhooks ${state} #${round}`;
          rows.push(
            { name: `${name}: issuances/s at ${concurrency} in flight`, value: issued / elapsed, unit: '/s' },
            { name: `${name}: non-201 answers`, value: failures, unit: '' },
          );
          if (cpu0 !== undefined && cpu1 !== undefined)
            rows.push({
              name: `${name}: server CPU per issuance`,
              value: (cpu1 - cpu0) / Math.max(1, issued),
              unit: 'ms',
            });
        }
      return rows;
    }
    // PostgreSQL's backends serving this issuer (same machine): their CPU is the engine's share.
    const database = options.databaseUrl?.startsWith('postgres')
      ? new URL(options.databaseUrl).pathname.slice(1)
      : undefined;
    const backends0 = database ? backendCpuMs(database) : undefined;
    if (loopFile) server.child.kill('SIGUSR2');
    const stopBeside = await options.beside?.(server);
    const cpu0 = processTreeCpuMs(server.child.pid!);
    const main0 = mainThreadCpuMs(server.child.pid!);
    const start = performance.now();
    const latencies = await run(seconds * 1000);
    const besideRows = (await stopBeside?.()) ?? [];
    const elapsed = (performance.now() - start) / 1000;
    const cpu1 = processTreeCpuMs(server.child.pid!);
    const main1 = mainThreadCpuMs(server.child.pid!);
    const backends1 = database ? backendCpuMs(database) : undefined;
    const loop = loopFile ? await loopFigures(server.child, loopFile) : undefined;
    latencies.sort((a, b) => a - b);
    // Only 201s are issuances: a run whose answers fail fast must not look cheap.
    const issued = latencies.length - failures;
    const rows: Row[] = [
      {
        name: `${tag}: issuances/s at ${concurrency} in flight`,
        value: issued / elapsed,
        unit: '/s',
      },
      { name: `${tag}: p50 latency`, value: percentile(latencies, 50), unit: 'ms' },
      { name: `${tag}: p99 latency`, value: percentile(latencies, 99), unit: 'ms' },
      { name: `${tag}: non-201 answers`, value: failures, unit: '' },
    ];
    if (cpu0 !== undefined && cpu1 !== undefined)
      rows.push({
        name: `${tag}: server CPU per issuance`,
        value: (cpu1 - cpu0) / Math.max(1, issued),
        unit: 'ms',
      });
    // With the keys in a token the signature is made on libuv's thread pool: what the server
    // spends off its main thread shows the token's share (WORKERS=1).
    if (
      options.keyBackend &&
      workers === 1 &&
      cpu0 !== undefined &&
      cpu1 !== undefined &&
      main0 !== undefined &&
      main1 !== undefined
    )
      rows.push({
        name: `${tag}: server CPU off the main thread per issuance`,
        value: (cpu1 - cpu0 - (main1 - main0)) / Math.max(1, issued),
        unit: 'ms',
      });
    if (backends0 && backends1 && backends1.size > 0 && cpu0 !== undefined && cpu1 !== undefined) {
      let backendMs = 0;
      for (const [pid, ms] of backends1) backendMs += ms - (backends0.get(pid) ?? 0);
      const per = Math.max(1, issued);
      rows.push(
        { name: `${tag}: PostgreSQL backend CPU per issuance`, value: backendMs / per, unit: 'ms' },
        {
          name: `${tag}: server + backend CPU per issuance`,
          value: (cpu1 - cpu0 + backendMs) / per,
          unit: 'ms',
        },
      );
    }
    if (loop) {
      const per = Math.max(1, issued);
      rows.push(
        { name: `${tag}: event-loop delay p99`, value: loop.loopDelay.p99, unit: 'ms' },
        { name: `${tag}: event-loop delay max`, value: loop.loopDelay.max, unit: 'ms' },
        { name: `${tag}: GC pauses per issuance`, value: loop.gc.totalMs / per, unit: 'ms' },
        {
          name: `${tag}: GC pauses, count per second`,
          value: loop.gc.count / (loop.windowMs / 1000),
          unit: '/s',
        },
        { name: `${tag}: GC pause max`, value: loop.gc.maxMs, unit: 'ms' },
        {
          name: `${tag}: GC pause share of the window`,
          value: (100 * loop.gc.totalMs) / loop.windowMs,
          unit: '%',
        },
      );
      // Scavenges (minor) and mark-compacts (major) apart: a few long pauses make a tail, many short ones do not.
      for (const [kind, k] of Object.entries(loop.gc.byKind))
        rows.push(
          {
            name: `${tag}: GC ${kind} pauses per second`,
            value: k.count / (loop.windowMs / 1000),
            unit: '/s',
          },
          { name: `${tag}: GC ${kind} pause mean`, value: k.ms / Math.max(1, k.count), unit: 'ms' },
          { name: `${tag}: GC ${kind} pause max`, value: k.maxMs, unit: 'ms' },
        );
    }
    rows.push(...besideRows);
    if (options.after) rows.push(...(await options.after(server)));
    return rows;
  } finally {
    for (const close of closers.reverse()) await close();
    removeDir(dir);
  }
}

/** scripts/bench/loop-probe.mjs, preloaded into the issuer: its event loop's stalls and GC pauses. */
const LOOP_PROBE = pathToFileURL(join(ROOT, 'scripts/bench/loop-probe.mjs')).href;

interface LoopFigures {
  windowMs: number;
  loopDelay: { p50: number; p99: number; p999: number; max: number; mean: number; samples: number };
  gc: {
    count: number;
    totalMs: number;
    p99Ms: number;
    maxMs: number;
    byKind: Record<string, { count: number; ms: number; maxMs: number }>;
  };
}

/** Ends the probe's window (its second SIGUSR2) and reads what it wrote. */
async function loopFigures(child: ChildProcess, file: string): Promise<LoopFigures | undefined> {
  child.kill('SIGUSR2');
  const until = performance.now() + 5000;
  while (!existsSync(file)) {
    if (performance.now() > until) return undefined;
    await new Promise((r) => setTimeout(r, 20));
  }
  // Written in one call; a read that races the write finds it whole once it parses.
  for (;;) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as LoopFigures;
    } catch (err) {
      if (performance.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/**
 * A webhook receiver answering 204, registered on the issuer (for every event type) and removed
 * on demand; `caughtUp(n)` resolves once `n` credential.issued and `n` credential.delivered events
 * have arrived in all.
 */
async function startReceiver(server: { url: string; adminApiKey: string }) {
  const counts = { issued: 0, delivered: 0 };
  const waiters: Array<() => void> = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const type = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string }).type;
      if (type === 'credential.issued') counts.issued++;
      if (type === 'credential.delivered') counts.delivered++;
      res.writeHead(204).end();
      for (const w of waiters.splice(0)) w();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const admin = { 'content-type': 'application/json', 'x-admin-api-key': server.adminApiKey };
  let endpoint: string | undefined;
  return {
    /** Registers the receiver as an endpoint for every event type. */
    async register() {
      if (endpoint) return;
      const res = await fetch(`${server.url}/admin/webhooks`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({
          url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
          events: ['*'],
        }),
      });
      if (res.status !== 201) throw new Error(`registering the webhook endpoint answered ${res.status}`);
      endpoint = ((await res.json()) as { id: string }).id;
    },
    /** Removes the endpoint: the issuer writes no events until it is registered again. */
    async unregister() {
      if (!endpoint) return;
      const res = await fetch(`${server.url}/admin/webhooks/${endpoint}`, {
        method: 'DELETE',
        headers: admin,
      });
      if (res.status >= 300) throw new Error(`removing the webhook endpoint answered ${res.status}`);
      endpoint = undefined;
    },
    async caughtUp(n: number) {
      while (counts.issued < n || counts.delivered < n) await new Promise<void>((ok) => waiters.push(ok));
    },
    close: () => {
      receiver.closeAllConnections();
      return new Promise<void>((ok) => receiver.close(() => ok()));
    },
  };
}
