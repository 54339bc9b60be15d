import { randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { chmodSync, chownSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulatorServer } from '../../src/development/emulator/server.js';
import { generateHolderKeyPair, openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { postgresAvailable, redisAvailable } from '../helpers/services.js';
import { removeDir, tempDir } from '../helpers/tmp.js';
import { call, freePort, healthcheck, podman, run, statusOf, verifyAsHolder as verifyAt } from './helpers.js';

// The image (docs/deployment.md), run as its users run it: read-only root filesystem, its own
// non-root user, keys in a volume, the schemas mounted read-only, production settings, PostgreSQL
// and Redis of this machine, the emulator as the hosting service.
// scripts/container/test-container.sh builds the image first.
const IMAGE = process.env.CONTAINER_IMAGE ?? 'localhost/issuer-kit:test';
const PG_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const secret = () => randomBytes(32).toString('base64');

const port = await freePort();
const dbName = `issuer_container_${randomBytes(4).toString('hex')}`;
const keysDir = tempDir();
const name = `issuer-kit-test-${randomBytes(4).toString('hex')}`;
const env: Record<string, string> = {
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
  PORT: String(port),
  ISSUER_ORIGIN: 'https://issuer.container.test',
  API_KEY: secret(),
  ADMIN_API_KEY: secret(),
  PARTNER_ID: randomUUID(),
  DATABASE_URL: PG_URL.replace(/\/[^/]*$/, `/${dbName}`),
  KEY_ENCRYPTION_KEY: secret(),
  REDIS_URL: process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379',
  RATE_LIMIT_REDIS_PREFIX: `${name}:`,
  RATE_LIMIT_ADMIN_PER_MIN: '100000',
  RATE_LIMIT_HOLDER_PER_MIN: '100000',
  METRICS_TOKEN: secret(),
  // The emulator on this machine speaks http.
  ALLOW_INSECURE_UPSTREAM: '1',
  SHUTDOWN_GRACE_MS: '600000',
};
const envArgs = () => Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
// The image ships no schema: this checkout's, mounted read-only as compose.yaml mounts them.
const runArgs = [
  '--read-only',
  '--network',
  'host',
  '-v',
  `${keysDir}:/var/lib/issuer-kit/keys`,
  '-v',
  `${resolve('schemas')}:/app/schemas:ro`,
];
const admin = { 'x-admin-api-key': env.ADMIN_API_KEY as string };

let emulator: Awaited<ReturnType<typeof startEmulatorServer>>;
let gateServer: Server;

/**
 * The hosting service as the issuer sees it: the emulator behind a gate. While closed, calls are
 * held (an issuance stays in flight); open() lets them through.
 */
const gate = {
  closed: false,
  held: [] as (() => void)[],
  arrivals: new EventEmitter(),
  async heldAtLeast(n: number) {
    while (this.held.length < n) await once(this.arrivals, 'held');
  },
  open() {
    this.closed = false;
    for (const forward of this.held.splice(0)) forward();
  },
};
const issued: string[] = [];
let partnerJwks: { keys: [] } = { keys: [] };

async function healthy() {
  await expect.poll(() => statusOf(port, '/healthz')).toBe(200);
}

/** A direct issuance (POST /admin/issue-vc) to a new holder of the emulator. */
const issueDirect = (email: string) =>
  call(
    port,
    'POST',
    '/admin/issue-vc',
    { ...admin, 'idempotency-key': email },
    {
      userId: email,
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership',
      expiration: new Date(Date.now() + 86_400_000).toISOString(),
      credentialSubject: {
        givenName: 'Eve',
        familyName: 'Li',
        memberSince: '2022-01-01',
        tier: 'basic',
        memberNumber: 9,
      },
    },
  );

const verifyAsHolder = (compact: string) => verifyAt(compact, port, join(keysDir, '..'));

beforeAll(async () => {
  if (!services) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`CREATE DATABASE ${dbName}`);
  await client.end();
  emulator = await startEmulatorServer({
    // A hosting service keeps the partner keys it fetched: a draining issuer refuses new
    // connections, its JWKS included.
    jwks: async () => {
      const r = await call(port, 'GET', '/.well-known/jwks.json', {});
      if ('status' in r && r.status === 200) partnerJwks = r.body as { keys: [] };
      return partnerJwks;
    },
    partnerId: env.PARTNER_ID as string,
  });
  const upstream = new URL(emulator.url);
  gateServer = createHttpServer((req, res) => {
    const forward = () => {
      const up = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (!gate.closed) return forward();
    gate.held.push(forward);
    gate.arrivals.emit('held');
  });
  await new Promise<void>((r) => gateServer.listen(0, '127.0.0.1', r));
  env.SERVICE_V1_BASE_URL = `http://127.0.0.1:${(gateServer.address() as { port: number }).port}/v1`;
  // The volume belongs to the image's user (uid 10001), owner-only.
  chownSync(keysDir, 10001, 10001);
  chmodSync(keysDir, 0o700);
});

afterAll(async () => {
  if (!services) return;
  await podman('rm', '-f', '-t', '0', name).catch(() => undefined);
  gate.open();
  gateServer?.close();
  await emulator?.close();
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await client.end();
  removeDir(keysDir);
});

// PostgreSQL and Redis of this machine (REQUIRE_SERVICES=1: missing is a failure, not a skip).
const services = (await postgresAvailable('test:container')) && (await redisAvailable('test:container'));

describe.runIf(services)('the container image', () => {
  it('generates the production keys with the image itself, into the volume', async () => {
    await podman(
      'run',
      '--rm',
      ...runArgs,
      ...envArgs(),
      IMAGE,
      // The compiled script the image built: on a read-only root, a stale or missing build fails.
      'node',
      'scripts/launch.mjs',
      'scripts/keys-generate.ts',
    );
    const files = readdirSync(keysDir).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(3);
  });

  it('starts read-only, as a non-root user, and answers /healthz', async () => {
    await podman('run', '-d', '--name', name, ...runArgs, ...envArgs(), IMAGE);
    await healthy();
    expect(await podman('exec', name, 'id', '-u')).toBe('10001');
    // PID 1 is the server itself (node), running as 10001.
    const status = await podman('exec', name, 'cat', '/proc/1/status');
    expect(status).toMatch(/^Uid:\s+10001\s+10001\s+10001\s+10001$/m);
    expect(await podman('exec', name, 'cat', '/proc/1/comm')).toBe('node');
    // The image's HEALTHCHECK (GET /healthz) passes (a run can exceed its 3 s on a busy machine).
    await expect.poll(() => healthcheck(name)).toBe('healthy');
    // The root filesystem is read-only.
    await expect(podman('exec', name, 'touch', '/app/x')).rejects.toThrow();
  });

  it('issues hosted and direct credentials a holder verifies', async () => {
    const userId = `container-${randomUUID()}`;
    const claims = await call(port, 'POST', '/admin/claims', admin, {
      records: [
        {
          userId,
          schemaId: 'membership-v1',
          claims: {
            givenName: 'Ada',
            familyName: 'Byron',
            memberSince: '2020-02-02',
            tier: 'gold',
            memberNumber: 7,
          },
        },
      ],
    });
    expect('status' in claims && claims.status).toBe(200);

    const holder = generateHolderKeyPair('x25519');
    const hosted = await call(
      port,
      'POST',
      '/issue-vc',
      { 'x-api-key': env.API_KEY as string },
      {
        holderDID: `did:example:${userId}`,
        pubKey: holder.publicKeyHex,
        userId,
        schemaId: 'membership-v1',
      },
    );
    expect('status' in hosted && hosted.status).toBe(201);

    // /issue-vc answers 201 with no body; the upload's externalId is the credential id.
    const [hostedId, stored] = [...emulator.emulator.state.envelopes].find(
      ([, s]) => s.envelope.holderDid === `did:example:${userId}`,
    )!;
    const hostedVc = openEnvelope(holder.privateKey, stored!.envelope) as string;
    expect(await verifyAsHolder(hostedVc)).toMatchObject({ ok: true });
    expect(hostedId).toEqual(expect.any(String));
    issued.push(hostedId);

    const email = `direct.${randomUUID()}@example.org`;
    const direct = await issueDirect(email);
    expect('status' in direct && direct.status).toBe(201);
    const directId = (direct as { body: Record<string, unknown> }).body.credentialId as string;
    const key = privateKeyFromPkcs8Hex(emulator.emulator.state.holderByEmail(email)!.privateKeyPkcs8Hex);
    const directVc = openEnvelope(key, emulator.emulator.state.envelopes.get(directId)!.envelope) as string;
    expect(await verifyAsHolder(directVc)).toMatchObject({ ok: true });
    issued.push(directId);
  });

  it('a second instance on the same database serves the same keys and issues', async () => {
    const port2 = await freePort();
    const second = `${name}-2`;
    const args = envArgs().map((a) => (a === `PORT=${port}` ? `PORT=${port2}` : a));
    await podman('run', '-d', '--name', second, ...runArgs, ...args, IMAGE);
    try {
      await expect.poll(() => statusOf(port2, '/healthz')).toBe(200);
      const jwks = await Promise.all([port, port2].map((p) => call(p, 'GET', '/.well-known/jwks.json', {})));
      expect(jwks[1]).toEqual(jwks[0]);
      const email = `second.${randomUUID()}@example.org`;
      const r = await call(
        port2,
        'POST',
        '/admin/issue-vc',
        { ...admin, 'idempotency-key': email },
        {
          userId: email,
          schemaId: 'membership-v1',
          vct: 'urn:vct:membership',
          expiration: new Date(Date.now() + 86_400_000).toISOString(),
          credentialSubject: {
            givenName: 'Sam',
            familyName: 'Ode',
            memberSince: '2021-01-01',
            tier: 'basic',
            memberNumber: 2,
          },
        },
      );
      expect('status' in r && r.status).toBe(201);
      issued.push((r as { body: Record<string, unknown> }).body.credentialId as string);
    } finally {
      await podman('rm', '-f', '-t', '10', second);
    }
  });

  it('SIGTERM during a burst: the requests in flight finish, later ones are refused, none reset; exit 0', async () => {
    gate.closed = true;
    const burst = Array.from({ length: 20 }, () => issueDirect(`burst.${randomUUID()}@example.org`));
    // Every issuance of the burst is in flight: its call to the hosting service is held.
    await gate.heldAtLeast(burst.length);
    await podman('kill', '--signal', 'TERM', name);
    await expect.poll(async () => podman('logs', name)).toContain('"event":"shutdown"');
    // Sent after the signal: refused (connection refused, or 503), never reset.
    const late = await Promise.all(
      Array.from({ length: 5 }, () => issueDirect(`late.${randomUUID()}@example.org`)),
    );
    for (const r of late) {
      if ('error' in r) expect(r.error).toBe('ECONNREFUSED');
      else expect(r.status, JSON.stringify(r.body)).toBe(503);
    }
    gate.open();
    const answered = await Promise.all(burst);
    for (const r of answered) expect('status' in r ? r.status : r.error, JSON.stringify(r)).toBe(201);
    issued.push(...answered.map((r) => (r as { body: Record<string, unknown> }).body.credentialId as string));
    expect(await podman('wait', name)).toBe('0');
    const logs = await podman('logs', name);
    const drained = logs.split('\n').find((l) => l.includes('"event":"drained"'));
    expect(JSON.parse(drained ?? '{}')).toMatchObject({ finished: true });
    console.log(
      `SIGTERM during a burst: ${answered.length} in flight, all issued; ${late.length} sent after, all refused`,
    );
  });

  it('after a restart, every issuance is there', async () => {
    await podman('start', name);
    await healthy();
    const listed = new Set<string>();
    let cursor: string | null = null;
    do {
      const r = await call(
        port,
        'GET',
        `/admin/issuance-history?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        admin,
      );
      if (!('status' in r)) throw new Error(r.error);
      expect(r.status).toBe(200);
      const page = r.body as { data: { credentialId: string }[]; pagination: { nextCursor: string | null } };
      for (const row of page.data) listed.add(row.credentialId);
      cursor = page.pagination.nextCursor;
    } while (cursor);
    expect(issued.filter((id) => !listed.has(id))).toEqual([]);
  });

  it('the image holds no private key, secret or database', async () => {
    const root = await podman('image', 'mount', IMAGE);
    try {
      // This run's secrets and the private halves of the keys it generated: in no file of the image.
      const privates = readdirSync(keysDir)
        .filter((f) => f.endsWith('.json'))
        .flatMap((f) =>
          [...readFileSync(join(keysDir, f), 'utf8').matchAll(/"d"\s*:\s*"([^"]+)"/g)].map(
            (m) => m[1] as string,
          ),
        );
      const needles = [
        env.API_KEY,
        env.ADMIN_API_KEY,
        env.KEY_ENCRYPTION_KEY,
        env.METRICS_TOKEN,
        ...privates,
      ] as string[];
      const patterns = join(keysDir, '..', `${name}.needles`);
      writeFileSync(patterns, needles.join('\n'));
      const found = await run('grep', ['-rlF', '-f', patterns, root]).then(
        (r) => r.stdout.trim(),
        (e: { code?: number; stdout?: string }) => (e.code === 1 ? '' : String(e.stdout)),
      );
      expect(found).toBe('');
      // No key file, .env, database or PEM private key in the application folder.
      const appFiles = (
        await run('find', [
          join(root, 'app'),
          '-path',
          join(root, 'app', 'node_modules'),
          '-prune',
          '-o',
          '-type',
          'f',
          '-print',
        ])
      ).stdout
        .split('\n')
        .filter(Boolean);
      for (const f of appFiles) {
        expect(f.slice(join(root, 'app').length)).not.toMatch(/^\/(keys|data)\/|\/\.env$|\.db(-wal|-shm)?$/);
        expect(readFileSync(f, 'latin1'), f).not.toMatch(/-----BEGIN [A-Z ]*PRIVATE KEY-----/);
      }
      expect(await podman('image', 'inspect', '--format', '{{.Config.User}}', IMAGE)).toBe('10001:10001');
      // No schema: not the example, nor any file of the build folder; the schemas are mounted.
      expect(readdirSync(join(root, 'app', 'schemas'))).toEqual([]);
    } finally {
      await podman('image', 'unmount', IMAGE);
    }
  });
});
