import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

// What the container tests share: podman, a free host port, one HTTP call, a holder's verify.
export const run = promisify(execFile);

export const podman = async (...args: string[]) =>
  (await run('podman', args, { maxBuffer: 64 << 20 })).stdout.trim();

/** One run of a container's healthcheck: `healthy`, or why not (what expect.poll waits on). */
export const healthcheck = (container: string) =>
  podman('healthcheck', 'run', container).then(
    (out) => out || 'healthy',
    (e: { stderr?: string }) => e.stderr?.trim() || 'unhealthy',
  );

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

export type Outcome = { status: number; body: Record<string, unknown> } | { error: string };

/** One request on its own connection (no keep-alive), so a reset is the server's doing. */
export const call = (
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
) =>
  new Promise<Outcome>((resolve) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: { ...headers, ...(data ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
        res.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    req.end(data);
  });

/** The status of GET `path`, or the connection's error code: what expect.poll waits on. */
export const statusOf = async (port: number, path: string) => {
  const r = await call(port, 'GET', path, {});
  return 'status' in r ? r.status : r.error;
};

/**
 * What a holder does: `npm run admin -- verify` of the credential, against the issuer on `port`.
 * `dir` holds the credential's file.
 */
export async function verifyAsHolder(compact: string, port: number, dir: string) {
  const file = join(dir, `${randomUUID()}.sdjwt`);
  writeFileSync(file, compact);
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', 'scripts/admin.ts', 'verify', file, '--origin', `http://127.0.0.1:${port}`, '--json'],
    { env: { ...process.env, NODE_ENV: 'test' } },
  );
  return JSON.parse(stdout) as { ok: boolean };
}
