import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { type Envelope, openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { removeDir, tempDir } from '../helpers/tmp.js';
import { call, freePort, healthcheck, podman, run, statusOf, verifyAsHolder } from './helpers.js';

// compose.yaml (docs/deployment.md "Compose"), started for real with the compose tool installed
// here (podman-compose): PostgreSQL, Redis and two issuers from a clean checkout's compose file,
// then the development profile's emulator, then an issuance a holder verifies.
// scripts/container/test-container.sh builds the images and sets COMPOSE_DIR (that checkout).
const COMPOSE_DIR = process.env.COMPOSE_DIR;
const IMAGE = process.env.CONTAINER_IMAGE ?? 'localhost/issuer-kit:test';
const project = `ikc${randomBytes(4).toString('hex')}`;
const secret = () => randomBytes(32).toString('base64');
const ports = { issuer1: 0, issuer2: 0, emulator: 0 };
const admin = { 'x-admin-api-key': secret() };
const scratch = tempDir();
// One database password for the run: compose gives it to PostgreSQL and to the issuers' URL.
const postgresPassword = randomBytes(18).toString('hex');

/** `podman-compose -p <project> …` in the checkout, with compose.yaml's variables set. */
const compose = async (...args: string[]) =>
  (
    await run('podman-compose', ['-p', project, ...args], {
      cwd: COMPOSE_DIR,
      maxBuffer: 64 << 20,
      env: {
        ...process.env,
        POSTGRES_PASSWORD: postgresPassword,
        ISSUER_IMAGE: IMAGE,
        POSTGRES_IMAGE: process.env.POSTGRES_IMAGE,
        REDIS_IMAGE: process.env.REDIS_IMAGE,
        ISSUER_1_HOST_PORT: String(ports.issuer1),
        ISSUER_2_HOST_PORT: String(ports.issuer2),
        EMULATOR_HOST_PORT: String(ports.emulator),
      },
    })
  ).stdout;
const container = (service: string) => `${project}_${service}_1`;
/** The containers of this project, by service name. */
const running = async () =>
  (await podman('ps', '--filter', `label=io.podman.compose.project=${project}`, '--format', '{{.Names}}'))
    .split('\n')
    .filter(Boolean)
    .map((n) => n.slice(project.length + 1).replace(/_1$/, ''))
    .sort();
/** Runs the healthcheck compose.yaml declares for the service (podman here runs no timer for it). */
const healthy = (service: string) => healthcheck(container(service));

beforeAll(async () => {
  if (!COMPOSE_DIR) return;
  ports.issuer1 = await freePort();
  ports.issuer2 = await freePort();
  ports.emulator = await freePort();
  // examples/compose.env as the docs say: every placeholder replaced; the emulator lines taken.
  const env = readFileSync(join(COMPOSE_DIR, 'examples', 'compose.env'), 'utf8')
    .replace('https://<issuer.example.com>', 'https://issuer.compose.test')
    .replace(/^API_KEY=.*$/m, `API_KEY=${secret()}`)
    .replace(/^ADMIN_API_KEY=.*$/m, `ADMIN_API_KEY=${admin['x-admin-api-key']}`)
    .replace(/^METRICS_TOKEN=.*$/m, `METRICS_TOKEN=${secret()}`)
    .replace(/^KEY_ENCRYPTION_KEY=.*$/m, `KEY_ENCRYPTION_KEY=${secret()}`)
    .replace(/^PARTNER_ID=.*$/m, `PARTNER_ID=${randomUUID()}`)
    .replace(/^SERVICE_V1_BASE_URL=https:.*$/m, '')
    .replace('# SERVICE_V1_BASE_URL=http://emulator:4000/v1', 'SERVICE_V1_BASE_URL=http://emulator:4000/v1')
    .replace('# ALLOW_INSECURE_UPSTREAM=1', 'ALLOW_INSECURE_UPSTREAM=1');
  expect(env.replace(/^#.*$/gm, '')).not.toMatch(/<[^>]+>/);
  writeFileSync(join(COMPOSE_DIR, 'compose.env'), env, { mode: 0o600 });
});

afterAll(async () => {
  if (!COMPOSE_DIR) return;
  await compose('down', '-t', '40', '-v').catch(() => undefined);
  await podman('network', 'rm', '-f', `${project}_default`).catch(() => undefined);
  removeDir(scratch);
});

describe.runIf(COMPOSE_DIR)('compose.yaml with podman-compose', () => {
  it('generates the keys with compose run, as the docs say', async () => {
    await compose('run', '-T', '--rm', 'issuer-1', 'node', 'scripts/launch.mjs', 'scripts/keys-generate.ts');
    const keys = await podman(
      'run',
      '--rm',
      '-v',
      `${project}_keys:/keys:ro`,
      '--entrypoint',
      'ls',
      IMAGE,
      '/keys',
    );
    expect(keys.split('\n').filter((f) => f.endsWith('.json')).length).toBeGreaterThanOrEqual(3);
  });

  it('the production services start without the emulator; the issuers are healthy by their compose healthcheck', async () => {
    // podman-compose before 1.1.0 ignores `profiles`: the production services are named (docs/deployment.md).
    await compose('up', '-d', 'postgres', 'redis');
    // What `condition: service_healthy` waits for, where this podman-compose does not wait.
    await expect.poll(() => healthy('postgres')).toBe('healthy');
    await expect.poll(() => healthy('redis')).toBe('healthy');
    await compose('up', '-d', 'issuer-1');
    await expect.poll(() => healthy('issuer-1')).toBe('healthy');
    await compose('up', '-d', 'issuer-2');
    await expect.poll(() => healthy('issuer-2')).toBe('healthy');
    expect(await running()).toEqual(['issuer-1', 'issuer-2', 'postgres', 'redis']);

    // The healthcheck is compose.yaml's (a shell command), not only the image's.
    const declared = parseYaml(readFileSync(join(COMPOSE_DIR!, 'compose.yaml'), 'utf8'), { merge: true }) as {
      services: Record<string, { healthcheck?: { test: string[] } }>;
    };
    const check = declared.services['issuer-1']?.healthcheck?.test;
    expect(check?.[0]).toBe('CMD-SHELL');
    const inspected = JSON.parse(
      await podman('inspect', '--format', '{{json .Config.Healthcheck}}', container('issuer-1')),
    ) as { Test: string[] };
    expect(inspected.Test[0]).toBe('CMD-SHELL');
    expect(inspected.Test.join(' ')).toContain('/healthz');
    // The schemas are the checkout's, mounted read-only.
    expect(await podman('exec', container('issuer-1'), 'ls', '/app/schemas')).toContain('membership-v1.json');
    await expect(podman('exec', container('issuer-1'), 'touch', '/app/schemas/x.json')).rejects.toThrow();
    // The same keys on both instances (issuer-1 sealed them into PostgreSQL).
    const jwks = await Promise.all(
      [ports.issuer1, ports.issuer2].map((p) => call(p, 'GET', '/.well-known/jwks.json', {})),
    );
    expect(jwks[0]).toMatchObject({ status: 200 });
    expect(jwks[1]).toEqual(jwks[0]);
  });

  it('with the emulator of the development profile, an issuance through issuer-1 that a holder verifies', async () => {
    await compose('up', '-d', 'emulator');
    await expect.poll(() => statusOf(ports.emulator, '/v1/_emulator/requests')).toBe(200);
    const email = `compose.${randomUUID()}@example.org`;
    const issued = await call(
      ports.issuer1,
      'POST',
      '/admin/issue-vc',
      { ...admin, 'idempotency-key': email },
      {
        userId: email,
        schemaId: 'membership-v1',
        vct: 'urn:vct:membership',
        expiration: new Date(Date.now() + 86_400_000).toISOString(),
        credentialSubject: {
          givenName: 'Ada',
          familyName: 'Byron',
          memberSince: '2020-02-02',
          tier: 'gold',
          memberNumber: 7,
        },
      },
    );
    expect('status' in issued && issued.status, JSON.stringify(issued)).toBe(201);
    const credentialId = (issued as { body: Record<string, unknown> }).body.credentialId as string;

    // The holder's wallet, as the emulator keeps it.
    const holder = await call(
      ports.emulator,
      'GET',
      `/v1/_emulator/holders/${encodeURIComponent(email)}`,
      {},
    );
    const stored = await call(ports.emulator, 'GET', `/v1/_emulator/envelopes/${credentialId}`, {});
    if (!('status' in holder) || !('status' in stored)) throw new Error('the emulator did not answer');
    const key = privateKeyFromPkcs8Hex(holder.body.privateKeyPkcs8Hex as string);
    const vc = openEnvelope(key, stored.body.envelope as Envelope) as string;
    // Verified against the other instance: one issuer, two instances.
    expect(await verifyAsHolder(vc, ports.issuer2, scratch)).toMatchObject({ ok: true });

    // Listed by issuer-2 from the shared database.
    const history = await call(ports.issuer2, 'GET', '/admin/issuance-history?limit=10', admin);
    expect(
      'status' in history && (history.body.data as { credentialId: string }[]).map((r) => r.credentialId),
    ).toContain(credentialId);
  });

  it('admin doctor inside issuer-1 names where the example schema is changed: the read-only mount', async () => {
    const out = await run(
      'podman',
      ['exec', container('issuer-1'), 'node', 'scripts/launch.mjs', 'scripts/admin.ts', 'doctor', '--json'],
      { maxBuffer: 16 << 20 },
    ).then(
      (r) => r.stdout,
      (e: { stdout?: string }) => e.stdout ?? '',
    );
    const { items } = JSON.parse(out) as { items: { item: string; verdict: string; detail: string }[] };
    expect(items.find((l) => l.item === 'schemas')).toMatchObject({ verdict: 'PASS' });
    expect(items.find((l) => l.item === 'example schema')).toMatchObject({
      verdict: 'WARN',
      detail: expect.stringContaining('in the folder mounted at /app/schemas (read-only here)'),
    });
  });
});
