import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import { runCli } from '../helpers/cli.js';
import { issuerJwks } from '../helpers/jwks.js';
import { startMainProcess } from '../helpers/main-process.js';
import { removeDir, tempDir } from '../helpers/tmp.js';

const schema = (schemaId: string, extra: Record<string, unknown> = {}) => ({
  schemaId,
  proofTypes: ['SD_JWT_VC'],
  credentialSubject: {
    type: 'object',
    properties: { name: { type: 'string' } },
    required: ['name'],
    additionalProperties: false,
  },
  ...extra,
});

// docs/schemas-and-claims.md "Reloading schemas", on a real process: a new file is served after
// POST /admin/schemas/reload or SIGHUP; a bad file leaves the set in service unchanged.
describe('schema reload', () => {
  const cleanup: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('serves a new schema file after the admin route and after SIGHUP; a bad file keeps the old set', async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const schemasDir = join(dir, 'schemas');
    mkdirSync(schemasDir);
    writeFileSync(join(schemasDir, 'first-v1.json'), JSON.stringify(schema('first-v1')));
    let issuerUrl: string | undefined;
    const emulator = await startEmulatorServer({
      jwks: issuerJwks(() => issuerUrl),
    });
    cleanup.push(() => emulator.close());
    const child = await startMainProcess({
      KEYS_DIR: join(dir, 'keys'),
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      SCHEMAS_DIR: schemasDir,
      // The reloads by hand alone: the watch would read the new files first.
      SCHEMAS_WATCH: 'off',
      SERVICE_V1_BASE_URL: emulator.url,
      LOG_FORMAT: 'json',
    });
    cleanup.push(async () => {
      if (child.proc.exitCode === null && child.proc.signalCode === null) {
        child.proc.kill('SIGTERM');
        await once(child.proc, 'exit');
      }
    });
    issuerUrl = child.url;
    const origin = String(child.lines.find((l) => l.event === 'listening')?.origin);
    const { apiKey, adminApiKey } = JSON.parse(
      readFileSync(join(dir, 'keys', 'dev-secrets.json'), 'utf8'),
    ) as {
      apiKey: string;
      adminApiKey: string;
    };
    const admin = (path: string, body: unknown = {}) =>
      fetch(`${child.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-api-key': adminApiKey },
        body: JSON.stringify(body),
      });
    let n = 0;
    /** Imports claims for the schema, then issues through POST /issue-vc and opens the envelope. */
    const issue = async (schemaId: string) => {
      const userId = `user-${n++}`;
      const imported = await admin('/admin/claims', {
        records: [{ userId, schemaId, claims: { name: 'Ada' } }],
      });
      if (imported.status !== 200) return imported.status;
      const holder = generateHolderKeyPair();
      const holderDID = `did:example:${userId}`;
      const res = await fetch(`${child.url}/issue-vc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        body: JSON.stringify({ holderDID, pubKey: holder.publicKeyHex, userId, schemaId }),
      });
      await res.arrayBuffer();
      if (res.status !== 201) return res.status;
      const stored = [...emulator.emulator.state.envelopes.values()].find(
        (e) => e.envelope.holderDid === holderDID,
      )!;
      const compact = openEnvelope(holder.privateKey, stored.envelope) as string;
      return decodeJwt(compact.split('~')[0]!);
    };

    expect(await issue('second-v1')).toBe(400);

    // A new file, no sdJwt block: after the route it issues, under the default vct, whose type
    // metadata the server now serves.
    writeFileSync(join(schemasDir, 'second-v1.json'), JSON.stringify(schema('second-v1')));
    const reloaded = await admin('/admin/schemas/reload', { reason: 'new schema' });
    expect(reloaded.status).toBe(200);
    const body = (await reloaded.json()) as { schemas: Array<{ schemaId: string; vct: string }> };
    expect(body.schemas.map((s) => s.schemaId)).toEqual(['first-v1', 'second-v1']);
    const vct = `${origin}/vct/second-v1`;
    expect(body.schemas[1]!.vct).toBe(vct);
    const payload = await issue('second-v1');
    expect(payload).toMatchObject({ vct });
    expect(typeof (payload as Record<string, unknown>)['vct#integrity']).toBe('string');
    const metadata = await fetch(`${child.url}/vct/second-v1`);
    expect(metadata.status).toBe(200);
    expect(((await metadata.json()) as { vct: string }).vct).toBe(vct);

    // A broken file: 422 naming it, the log says why, and the set in service is unchanged.
    const before = child.lines.length;
    writeFileSync(
      join(schemasDir, 'broken.json'),
      JSON.stringify(schema('broken-v1', { proofTypes: ['NOPE'] })),
    );
    writeFileSync(join(schemasDir, 'third-v1.json'), JSON.stringify(schema('third-v1')));
    const refused = await admin('/admin/schemas/reload');
    expect(refused.status).toBe(422);
    const error = (await refused.json()) as {
      code: string;
      details: { problems: Array<{ file: string }>; schemas: Array<{ schemaId: string }> };
    };
    expect(error.code).toBe('SCHEMAS_INVALID');
    expect(error.details.problems.map((p) => p.file)).toEqual([join(schemasDir, 'broken.json')]);
    expect(error.details.schemas.map((s) => s.schemaId)).toEqual(['first-v1', 'second-v1']);
    expect(await child.waitFor('schemas_reload_failed', before)).toMatchObject({
      schemaIds: ['first-v1', 'second-v1'],
    });
    expect(await issue('third-v1')).toBe(400);
    expect(await issue('second-v1')).toMatchObject({ vct });

    // The CLI: `schemas reload` prints each problem and exits 1; `schemas validate` checks one
    // file offline the same way.
    const cliEnv = { ISSUER_URL: child.url, ADMIN_API_KEY: adminApiKey };
    const cliReload = await runCli(['schemas', 'reload'], cliEnv, dir);
    expect(cliReload.code).toBe(1);
    expect(cliReload.stderr.split('\n')[0]).toMatch(
      new RegExp(`^${join(schemasDir, 'broken.json')}: proofTypes`),
    );
    const invalid = await runCli(['schemas', 'validate', join(schemasDir, 'broken.json')], {}, dir);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr.trim().split('\n')).toHaveLength(1);
    const valid = await runCli(['schemas', 'validate', join(schemasDir, 'third-v1.json')], {}, dir);
    expect(valid.code).toBe(0);

    // SIGHUP once the file is fixed.
    rmSync(join(schemasDir, 'broken.json'));
    const beforeSignal = child.lines.length;
    child.proc.kill('SIGHUP');
    expect(await child.waitFor('schemas_reloaded', beforeSignal)).toMatchObject({
      trigger: 'SIGHUP',
      schemaIds: ['first-v1', 'second-v1', 'third-v1'],
    });
    expect(await issue('third-v1')).toMatchObject({ vct: `${origin}/vct/third-v1` });

    // The route's reloads (the CLI's included) are in the audit log with the key's actor.
    const audit = await fetch(`${child.url}/admin/audit?action=schemas.reload`, {
      headers: { 'x-admin-api-key': adminApiKey },
    });
    const entries = ((await audit.json()) as { data?: Array<Record<string, unknown>> }).data;
    expect(entries?.map((e) => e.actor)).toEqual(['admin', 'admin', 'admin']);
  });

  it('WORKERS=2: SIGHUP to the primary and the admin route each reload every worker', async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const schemasDir = join(dir, 'schemas');
    mkdirSync(schemasDir);
    writeFileSync(join(schemasDir, 'first-v1.json'), JSON.stringify(schema('first-v1')));
    let issuerUrl: string | undefined;
    const emulator = await startEmulatorServer({
      jwks: issuerJwks(() => issuerUrl),
    });
    cleanup.push(() => emulator.close());
    const child = await startMainProcess({
      WORKERS: '2',
      KEYS_DIR: join(dir, 'keys'),
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      SCHEMAS_DIR: schemasDir,
      // The reloads by hand alone: the watch would read the new files first.
      SCHEMAS_WATCH: 'off',
      SERVICE_V1_BASE_URL: emulator.url,
      LOG_FORMAT: 'json',
    });
    cleanup.push(async () => {
      if (child.proc.exitCode === null && child.proc.signalCode === null) {
        child.proc.kill('SIGTERM');
        await once(child.proc, 'exit');
      }
    });
    issuerUrl = child.url;
    const { adminApiKey } = JSON.parse(readFileSync(join(dir, 'keys', 'dev-secrets.json'), 'utf8')) as {
      adminApiKey: string;
    };
    const reloaded = (from: number) => child.waitForAll('schemas_reloaded', from, 2);
    await child.waitForAll('worker_serving', 0, 2);

    writeFileSync(join(schemasDir, 'second-v1.json'), JSON.stringify(schema('second-v1')));
    const beforeSignal = child.lines.length;
    child.proc.kill('SIGHUP');
    const bySignal = await reloaded(beforeSignal);
    expect(bySignal.map((l) => l.trigger)).toEqual(['primary', 'primary']);
    expect(new Set(bySignal.map((l) => l.pid)).size).toBe(2);
    for (const l of bySignal) expect(l.schemaIds).toEqual(['first-v1', 'second-v1']);

    writeFileSync(join(schemasDir, 'third-v1.json'), JSON.stringify(schema('third-v1')));
    const beforeRoute = child.lines.length;
    const res = await fetch(`${child.url}/admin/schemas/reload`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-api-key': adminApiKey },
      body: '{}',
    });
    expect(res.status).toBe(200);
    const byRoute = await reloaded(beforeRoute);
    expect(byRoute.map((l) => l.trigger).sort()).toEqual(['admin admin', 'primary']);
    expect(new Set(byRoute.map((l) => l.pid)).size).toBe(2);
    for (const l of byRoute) expect(l.schemaIds).toEqual(['first-v1', 'second-v1', 'third-v1']);
  });

  it('SCHEMAS_WATCH (on in development): a new file is served at once by the next admin request, a changed one after the poll; an unknown schema says how to reload', async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const schemasDir = join(dir, 'schemas');
    mkdirSync(schemasDir);
    writeFileSync(join(schemasDir, 'first-v1.json'), JSON.stringify(schema('first-v1')));
    const child = await startMainProcess({
      KEYS_DIR: join(dir, 'keys'),
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      SCHEMAS_DIR: schemasDir,
      LOG_FORMAT: 'json',
    });
    cleanup.push(async () => {
      if (child.proc.exitCode === null && child.proc.signalCode === null) {
        child.proc.kill('SIGTERM');
        await once(child.proc, 'exit');
      }
    });
    const { adminApiKey } = JSON.parse(readFileSync(join(dir, 'keys', 'dev-secrets.json'), 'utf8')) as {
      adminApiKey: string;
    };
    const cliEnv = { ISSUER_URL: child.url, ADMIN_API_KEY: adminApiKey };
    const csv = join(dir, 'claims.csv');
    writeFileSync(csv, 'userId,schemaId,credentialSubject.name\nu-1,second-v1,Ada\n');

    // Before the file exists: refused, and the answer says how to make the server read it.
    const unknown = await runCli(['claims', 'import', csv], cliEnv, dir);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown schema second-v1.*npm run admin -- schemas reload/);
    expect(unknown.stderr).toMatch(/nothing was imported/);

    // Written, then imported at once: the admin request looks at the folder before it is served.
    writeFileSync(join(schemasDir, 'second-v1.json'), JSON.stringify(schema('second-v1')));
    const imported = await runCli(['claims', 'import', csv], cliEnv, dir);
    expect(imported.code, imported.stderr).toBe(0);
    expect(await child.waitFor('schemas_reloaded')).toMatchObject({
      trigger: 'SCHEMAS_DIR changed',
      schemaIds: ['first-v1', 'second-v1'],
    });

    // A change no request asks about is read by the poll.
    const before = child.lines.length;
    writeFileSync(
      join(schemasDir, 'first-v1.json'),
      JSON.stringify(schema('first-v1', { title: 'First, renamed' })),
    );
    expect(await child.waitFor('schemas_reloaded', before)).toMatchObject({ trigger: 'SCHEMAS_DIR changed' });
    const types = await fetch(`${child.url}/vct/first-v1`);
    expect(((await types.json()) as { name?: string }).name).toBe('First, renamed');

    // A broken file is refused as any reload is: the set in service stays.
    const beforeBroken = child.lines.length;
    writeFileSync(join(schemasDir, 'broken.json'), '{');
    expect(await child.waitFor('schemas_reload_failed', beforeBroken)).toMatchObject({
      schemaIds: ['first-v1', 'second-v1'],
    });
  });
});
