import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { entryArgs } from './entry.js';
import { TEST_ADMIN_API_KEY, TEST_API_KEY, TEST_PARTNER_ID } from './issuer.js';
import { TEST_REDIS_URL } from './services.js';

/** A real server process (src/main.ts) on port 0, as an operator would run one instance. */
export interface InstanceProcess {
  url: string;
  child: ChildProcessWithoutNullStreams;
  /** Its stdout lines and stderr chunks, for a failure message. */
  output: string[];
}

export interface InstanceOptions {
  databaseUrl: string;
  /** The hosting service (an emulator) the instance uploads to. */
  serviceUrl: string;
  /** Its own working folder: KEYS_DIR lives there, never shared with another instance. */
  dir: string;
  /** Variables added to (or replacing) the defaults below. */
  env?: Record<string, string>;
}

/** Starts one instance and resolves with its URL once it listens; rejects if it exits first. */
export async function startInstanceProcess(options: InstanceOptions): Promise<InstanceProcess> {
  const child = spawn(process.execPath, entryArgs('src/main.ts'), {
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      PORT: '0',
      HOST: '127.0.0.1',
      ISSUER_ORIGIN: 'http://issuer.test',
      DATABASE_URL: options.databaseUrl,
      DATABASE_POOL_MAX: '4',
      KEY_ENCRYPTION_KEY: 'b2'.repeat(32),
      REDIS_URL: TEST_REDIS_URL,
      API_KEY: TEST_API_KEY,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      PARTNER_ID: TEST_PARTNER_ID,
      SERVICE_V1_BASE_URL: options.serviceUrl,
      KEYS_DIR: join(options.dir, 'keys'),
      RATE_LIMIT_HOLDER_PER_MIN: '0',
      RATE_LIMIT_ADMIN_PER_MIN: '0',
      RATE_LIMIT_PUBLIC_PER_MIN: '0',
      UPLOAD_TIMEOUT_MS: '2000',
      IDEN3_MERKLIZE_WORKERS: '0',
      ...options.env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  }) as ChildProcessWithoutNullStreams;
  const output: string[] = [];
  child.stderr.on('data', (chunk) => output.push(String(chunk)));
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      output.push(line);
      const m = /issuer-kit listening on (http:\/\/\S+)/.exec(line);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`instance exited ${code}: ${output.join('\n')}`)));
  });
  return { url, child, output };
}

export const isAlive = (i: InstanceProcess): boolean =>
  i.child.exitCode === null && i.child.signalCode === null;

/** SIGTERMs the live ones and resolves once every instance has exited. */
export async function stopInstanceProcesses(instances: InstanceProcess[]): Promise<void> {
  await Promise.all(
    instances.map((i) => {
      if (!isAlive(i)) return undefined;
      const exited = new Promise((ok) => i.child.once('exit', ok));
      i.child.kill('SIGTERM');
      return exited;
    }),
  );
}

/** The partner JWT keys any live instance publishes, for the emulator's `jwks`. */
export async function liveJwks(instances: InstanceProcess[]): Promise<{ keys: [] }> {
  for (const i of instances) {
    if (!isAlive(i)) continue;
    const res = await fetch(`${i.url}/.well-known/jwks.json`).catch(() => undefined);
    if (res?.ok) return (await res.json()) as { keys: [] };
  }
  return { keys: [] };
}
