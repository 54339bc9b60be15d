import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import type { JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { adaMembership } from '../helpers/direct-issue.js';
import { type MainProcess, startMainProcess } from '../helpers/main-process.js';
import { TEST_OPERATOR_KEY } from '../helpers/tenants.js';
import { removeDir, tempDir } from '../helpers/tmp.js';

const schema = (schemaId: string) => ({
  schemaId,
  proofTypes: ['SD_JWT_VC'],
  credentialSubject: {
    type: 'object',
    properties: { name: { type: 'string' } },
    required: ['name'],
    additionalProperties: false,
  },
});

/**
 * One request on a connection of its own (the cluster's primary hands each new connection to the
 * next worker in turn), with a request id of its own: its status, and the id to find the line
 * the worker that answered it wrote.
 */
function once1(url: string, host: string, path: string): Promise<{ status: number; id: string }> {
  const id = randomUUID();
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      { agent: false, headers: { 'x-forwarded-host': host, 'x-request-id': id } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, id }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

// docs/several-issuers.md "Idle tenants": with TENANCY=multi and WORKERS=2, a SIGHUP to the
// primary reaches every worker, and each one serves the tenants as the registry and their schema
// folders are now; the requests running meanwhile are all answered.
describe('SIGHUP with TENANCY=multi and WORKERS=2', () => {
  const dir = tempDir();
  const folder = join(dir, 'schemas-t2');
  let child: MainProcess;
  let emulator: EmulatorServer;
  const t1 = {
    id: 't1',
    host: 't1.issuers.test',
    partnerId: randomUUID(),
    adminKey: `admin-t1-${randomBytes(16).toString('hex')}`,
  };
  const t2AdminKey = `admin-t2-${randomBytes(16).toString('hex')}`;

  const operator = (path: string, body: unknown) =>
    fetch(`${child.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-operator-api-key': TEST_OPERATOR_KEY },
      body: JSON.stringify(body),
    });

  /**
   * Asks `path` of `host` on new connections until two different workers have answered (each
   * worker's request line names it); every answer's status, and the workers that gave them.
   */
  async function askEveryWorker(host: string, path: string) {
    const statuses: number[] = [];
    const workers = new Set<unknown>();
    for (let n = 0; n < 20 && workers.size < 2; n++) {
      const { status, id } = await once1(child.url, host, path);
      statuses.push(status);
      // pino writes asynchronously: the line may come after the answer.
      await expect.poll(() => child.lines.some((l) => l.reqId === id)).toBe(true);
      workers.add(child.lines.find((l) => l.reqId === id)!.worker);
    }
    return { statuses, workers };
  }

  beforeAll(async () => {
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'first-v1.json'), JSON.stringify(schema('first-v1')));
    emulator = await startEmulatorServer({
      partnerId: t1.partnerId,
      // t1's partner keys as its origin publishes them (both workers read the same key files).
      jwks: async () =>
        (await (
          await fetch(`${child.url}/.well-known/jwks.json`, { headers: { 'x-forwarded-host': t1.host } })
        ).json()) as { keys: JWK[] },
    });
    child = await startMainProcess({
      TENANCY: 'multi',
      WORKERS: '2',
      TRUST_PROXY: 'loopback',
      OPERATOR_API_KEY: TEST_OPERATOR_KEY,
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      KEYS_DIR: join(dir, 'keys'),
      RATE_LIMIT_ADMIN_PER_MIN: '0',
      // Every issuance must answer 201: an upload slowed down by a busy machine is not a failure here.
      UPLOAD_TIMEOUT_MS: '120000',
    });
    const serving = await child.waitForAll('worker_serving', 0, 2);
    expect(new Set(serving.map((l) => l.worker)).size).toBe(2);
    const added = await operator('/operator/tenants', {
      id: t1.id,
      origin: `https://${t1.host}`,
      settings: { partnerId: t1.partnerId, serviceBaseUrl: emulator.url },
      apiKey: `api-t1-${randomBytes(16).toString('hex')}`,
      adminApiKeys: { admin: t1.adminKey },
    });
    expect(added.status, await added.clone().text()).toBe(201);
  }, 180_000);
  afterAll(async () => {
    if (child && child.proc.exitCode === null && child.proc.signalCode === null) {
      child.proc.kill('SIGTERM');
      await once(child.proc, 'exit');
    }
    await emulator?.close();
    removeDir(dir);
  });

  it('every worker serves a tenant added and a schema changed, and no request is dropped', async () => {
    // t2 is added through one worker, and its folder gets a second schema.
    const added = await operator('/operator/tenants', {
      id: 't2',
      origin: 'https://t2.issuers.test',
      settings: { partnerId: randomUUID(), serviceBaseUrl: 'http://127.0.0.1:9', schemasDir: folder },
      apiKey: `api-t2-${randomBytes(16).toString('hex')}`,
      adminApiKeys: { admin: t2AdminKey },
    });
    expect(added.status, await added.clone().text()).toBe(201);
    writeFileSync(join(folder, 'second-v1.json'), JSON.stringify(schema('second-v1')));

    // A burst of t1's issuances; the SIGHUP goes to the primary once a few are answered.
    const from = child.lines.length;
    let answered = 0;
    let signalled = false;
    const issue = async (n: number) => {
      const res = await fetch(`${child.url}/admin/issue-vc`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-forwarded-host': t1.host,
          'x-admin-api-key': t1.adminKey,
        },
        body: JSON.stringify({
          userId: `ada.${n}@example.org`,
          schemaId: 'membership-v1',
          ...adaMembership(),
        }),
      });
      await res.arrayBuffer();
      if (++answered === 4 && !signalled) {
        signalled = true;
        child.proc.kill('SIGHUP');
      }
      return res.status;
    };
    const statuses = await Promise.all(Array.from({ length: 30 }, (_, n) => issue(n)));
    expect(signalled).toBe(true);
    expect(statuses).toEqual(statuses.map(() => 201));

    // Each worker says it reloaded, and serves both tenants.
    const reloaded = await child.waitForAll('tenants_reloaded', from, 2);
    expect(new Set(reloaded.map((l) => l.worker)).size).toBe(2);
    for (const line of reloaded) expect(line).toMatchObject({ trigger: 'primary', tenants: 2, failing: 0 });

    // Both workers answer for t2 and its new schema, and still for t1.
    for (const [host, path] of [
      ['t2.issuers.test', '/vct/second-v1'],
      ['t2.issuers.test', '/vct/first-v1'],
      [t1.host, '/.well-known/jwt-vc-issuer'],
    ] as const) {
      const { statuses: answers, workers } = await askEveryWorker(host, path);
      expect(workers.size).toBe(2);
      expect(answers).toEqual(answers.map(() => 200));
    }
    expect(child.proc.exitCode).toBeNull();
  });

  // docs/schemas-and-claims.md "Reloading schemas": a tenant's admins reload through whichever
  // worker takes the request, which passes the reload of that tenant on to the others.
  it("a tenant's own admin reload reaches every worker", async () => {
    writeFileSync(join(folder, 'third-v1.json'), JSON.stringify(schema('third-v1')));
    const from = child.lines.length;
    const res = await fetch(`${child.url}/admin/schemas/reload`, {
      method: 'POST',
      headers: { 'x-forwarded-host': 't2.issuers.test', 'x-admin-api-key': t2AdminKey },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const reloaded = await child.waitForAll('schemas_reloaded', from, 2);
    expect(new Set(reloaded.map((l) => l.worker)).size).toBe(2);
    expect(reloaded.map((l) => l.tenant)).toEqual(['t2', 't2']);
    expect(reloaded.map((l) => l.trigger).sort()).toEqual(['admin admin', 'primary']);
    const { statuses, workers } = await askEveryWorker('t2.issuers.test', '/vct/third-v1');
    expect(workers.size).toBe(2);
    expect(statuses).toEqual(statuses.map(() => 200));
  });
});
