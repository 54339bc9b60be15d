import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';
import { onIssuerCpus } from './pinning.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..');

export interface BenchServer {
  url: string;
  apiKey: string;
  adminApiKey: string;
  /** Its working folder (keys, database). */
  dir: string;
  /** From spawning the process to its "listening" line, in ms. */
  startMs: number;
  child: ChildProcess;
  close(): Promise<void>;
}

/**
 * The real server (`src/main.ts`, development defaults, the bundled emulator) in a child process on an
 * ephemeral port, with its own keys and database; the load comes from this process.
 */
export async function startBenchServer(
  env: Record<string, string> = {},
  options: {
    dir?: string;
    /** The kit checkout the issuer runs from (default this one). */
    cwd?: string;
    nodeArgs?: string[] /** Default: the compiled `src/main.ts`. */;
    entry?: string;
    /** false: no `dev-secrets.json` is read (TENANCY=multi writes none); apiKey and adminApiKey are ''. */
    devSecrets?: boolean;
  } = {},
): Promise<BenchServer> {
  const dir = options.dir ?? tempDir();
  // On its own CPU when the bench pins (./pinning.ts). The kit runs compiled, as `npm start` runs
  // it (scripts/launch.mjs); another entry (the floor) through tsx.
  const start = onIssuerCpus([
    ...(options.nodeArgs ?? []),
    ...(options.entry ? ['--import', 'tsx', options.entry] : ['scripts/launch.mjs', 'src/main.ts']),
  ]);
  const spawnedAt = performance.now();
  const child = spawn(start.command, start.args, {
    cwd: options.cwd ?? ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'development',
      PORT: '0',
      KEYS_DIR: join(dir, 'keys'),
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) resolve(m[1]!);
    });
  });
  child.stdout!.resume();
  const startMs = performance.now() - spawnedAt;
  const keysDir = env.KEYS_DIR ?? join(dir, 'keys');
  const secrets =
    options.devSecrets === false
      ? { apiKey: '', adminApiKey: '' }
      : (JSON.parse(readFileSync(join(keysDir, 'dev-secrets.json'), 'utf8')) as {
          apiKey: string;
          adminApiKey: string;
        });
  return {
    url,
    apiKey: secrets.apiKey,
    adminApiKey: secrets.adminApiKey,
    dir,
    child,
    startMs,
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      removeDir(dir);
    },
  };
}

/** CPU time (user + system, all threads) a process has used, in ms, from /proc (Linux). */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name; utime and stime are the 14th and 15th, in clock ticks (10 ms).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/**
 * CPU time (ms) of a process's main thread alone, from /proc/<pid>/task/<pid> (Linux): the rest of
 * its CPU is its other threads (libuv's thread pool, where C_SignAsync signs, and V8's helpers).
 */
export function mainThreadCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** CPU time of a process and its direct children (the workers of `WORKERS=N`), in ms. */
export function processTreeCpuMs(pid: number): number | undefined {
  const own = processCpuMs(pid);
  if (own === undefined) return undefined;
  let total = own;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) total += processCpuMs(Number(entry)) ?? 0;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

const TICKS_PER_MS = 100 / 1000; // USER_HZ = 100 on Linux

/**
 * CPU (ms) of each PostgreSQL server backend connected to `database`, by pid, found by their
 * process title ("postgres: user database host(port) state"): the server's pids in
 * pg_stat_activity may be another PID namespace's. Empty when the server's processes are not
 * visible here (another machine or container).
 */
export function backendCpuMs(database: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!title.startsWith('postgres: ') || !title.includes(` ${database} `)) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) / TICKS_PER_MS);
    } catch {
      // The process ended meanwhile.
    }
  }
  return out;
}

/** Total CPU (ms) of the backends connected to `database`; see backendCpuMs. */
export function backendsCpuTotalMs(database: string): number {
  return [...backendCpuMs(database).values()].reduce((sum, ms) => sum + ms, 0);
}
