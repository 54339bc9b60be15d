import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..');

export interface BenchServer {
  url: string;
  apiKey: string;
  adminApiKey: string;
  /** Its working folder (keys, database). */
  dir: string;
  child: ChildProcess;
  close(): Promise<void>;
}

/**
 * The real server (`src/main.ts`, development defaults, the bundled emulator) in a child process on an
 * ephemeral port, with its own keys and database; the load comes from this process.
 */
export async function startBenchServer(
  env: Record<string, string> = {},
  options: { dir?: string; nodeArgs?: string[] /** Default `src/main.ts`. */; entry?: string } = {},
): Promise<BenchServer> {
  const dir = options.dir ?? tempDir();
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), '--import', 'tsx', options.entry ?? 'src/main.ts'],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'development',
        PORT: '0',
        KEYS_DIR: join(dir, 'keys'),
        DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
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
  const secrets = JSON.parse(readFileSync(join(dir, 'keys', 'dev-secrets.json'), 'utf8')) as {
    apiKey: string;
    adminApiKey: string;
  };
  return {
    url,
    apiKey: secrets.apiKey,
    adminApiKey: secrets.adminApiKey,
    dir,
    child,
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
