import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MainProcess, startMainProcess } from '../helpers/main-process.js';
import { TEST_OPERATOR_KEY } from '../helpers/tenants.js';
import { removeDir, tempDir } from '../helpers/tmp.js';

const schema = (schemaId: string, proofTypes = ['SD_JWT_VC']) => ({
  schemaId,
  proofTypes,
  credentialSubject: {
    type: 'object',
    properties: { name: { type: 'string' } },
    required: ['name'],
    additionalProperties: false,
  },
});

// docs/several-issuers.md "Idle tenants", on a real TENANCY=multi process: SIGHUP makes each
// tenant read its own SCHEMAS_DIR again, as a single deployment does; a tenant whose folder has a
// bad file keeps the set it serves.
describe('SIGHUP with TENANCY=multi', () => {
  const dir = tempDir();
  let child: MainProcess;
  const folders = { t1: join(dir, 'schemas-t1'), t2: join(dir, 'schemas-t2') };
  const get = (id: string, path: string) =>
    fetch(`${child.url}${path}`, { headers: { 'x-forwarded-host': `${id}.issuers.test` } });

  beforeAll(async () => {
    for (const folder of Object.values(folders)) {
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, 'first-v1.json'), JSON.stringify(schema('first-v1')));
    }
    child = await startMainProcess({
      TENANCY: 'multi',
      TRUST_PROXY: 'loopback',
      OPERATOR_API_KEY: TEST_OPERATOR_KEY,
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      KEYS_DIR: join(dir, 'keys'),
      SCHEMAS_DIR: folders.t1,
    });
    for (const [id, folder] of Object.entries(folders)) {
      const added = await fetch(`${child.url}/operator/tenants`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-operator-api-key': TEST_OPERATOR_KEY },
        body: JSON.stringify({
          id,
          origin: `https://${id}.issuers.test`,
          settings: { partnerId: randomUUID(), serviceBaseUrl: 'http://127.0.0.1:9', schemasDir: folder },
          apiKey: `api-${id}`,
          adminApiKeys: { admin: `admin-${id}` },
        }),
      });
      expect(added.status).toBe(201);
    }
  }, 120_000);
  afterAll(async () => {
    if (child && child.proc.exitCode === null && child.proc.signalCode === null) {
      child.proc.kill('SIGTERM');
      await once(child.proc, 'exit');
    }
    removeDir(dir);
  });

  it("reloads each tenant's schema folder; a bad file is refused for its tenant alone", async () => {
    expect((await get('t1', '/vct/second-v1')).status).toBe(404);
    writeFileSync(join(folders.t1, 'second-v1.json'), JSON.stringify(schema('second-v1')));
    writeFileSync(join(folders.t2, 'broken.json'), JSON.stringify(schema('broken-v1', ['NOPE'])));
    const from = child.lines.length;
    child.proc.kill('SIGHUP');
    const [reloaded, failed] = await Promise.all([
      child.waitFor('schemas_reloaded', from),
      child.waitFor('schemas_reload_failed', from),
    ]);
    expect(reloaded).toMatchObject({ tenant: 't1', trigger: 'SIGHUP', schemaIds: ['first-v1', 'second-v1'] });
    expect(failed).toMatchObject({ tenant: 't2', trigger: 'SIGHUP', schemaIds: ['first-v1'] });
    expect((await get('t1', '/vct/second-v1')).status).toBe(200);
    expect((await get('t2', '/vct/first-v1')).status).toBe(200);
    expect((await get('t2', '/vct/broken-v1')).status).toBe(404);
    // Still serving: a SIGHUP never ends the process.
    expect(child.proc.exitCode).toBeNull();
  });
});
