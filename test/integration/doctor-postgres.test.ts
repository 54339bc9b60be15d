import { mkdirSync, readdirSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DoctorLine, runDoctor } from '../../src/cli/doctor.js';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { loadConfig } from '../../src/config/config.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { runCli } from '../helpers/cli.js';
import {
  queryStore,
  removeDir,
  startIssuer,
  TEST_ADMIN_API_KEY,
  TEST_API_KEY,
  TEST_PARTNER_ID,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

// `admin doctor` on PostgreSQL: it connects without migrating, and names what is missing.
const available = await postgresAvailable('admin doctor on PostgreSQL');

describe.runIf(available)('admin doctor on PostgreSQL', () => {
  let database: TempDatabase;
  let dir: string;
  beforeAll(async () => {
    database = await createTempDatabase();
    dir = tempDir();
  });
  afterAll(async () => {
    await database?.drop();
    removeDir(dir);
  });

  const databaseLines = async () => {
    const { config, secrets } = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      KEYS_DIR: `${dir}/keys`,
      API_KEY: TEST_API_KEY,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      PARTNER_ID: TEST_PARTNER_ID,
      // Nothing answers here: only the database lines matter to this test.
      ISSUER_ORIGIN: 'http://127.0.0.1:9',
      SERVICE_V1_BASE_URL: 'http://127.0.0.1:9/v1',
    });
    const lines = await runDoctor(config, secrets, { timeoutMs: 500 });
    return lines.filter((l) => l.item === 'database');
  };

  it('an empty database fails, naming the missing migrations, and doctor applies none', async () => {
    const lines = await databaseLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]?.verdict).toBe('FAIL');
    expect(lines[0]?.detail).toMatch(/lacks migrations 001-core\.sql/);
    expect(lines[0]?.detail).toMatch(/db:migrate/);
    // Still empty: doctor is read-only.
    expect(await databaseLines()).toEqual(lines);
  });

  it('a migrated database passes as writable and migrated', async () => {
    const store = await openPostgresStore(database.url, { poolMax: 1 });
    await store.close();
    const lines = await databaseLines();
    expect(lines).toEqual([
      {
        item: 'database',
        verdict: 'PASS',
        detail: expect.stringMatching(/writable, \d+ migrations applied$/),
      },
    ]);
  });
});

// The Iden3 key sealed in PostgreSQL: doctor opens it as the issuer would, read-only, and names the
// variable (never key bytes) when it does not open. A production issuer on loopback, so that the
// other items pass and the verdicts and exit status are the Iden3 key's.
describe.runIf(available)('admin doctor: the sealed Iden3 key on PostgreSQL', () => {
  // Random keys (openssl rand -hex 32): production refuses one that is not.
  const KEK = '9d1f3c7a52e84b06af6d2c18e9b3f5074a6c8e2d1b0f3a5c7e9d2b4f6a8c0e1d';
  const OTHER_KEK = '2b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfe';
  let database: TempDatabase;
  let issuer: TestIssuer;
  let env: Record<string, string>;
  const dir = tempDir();

  beforeAll(async () => {
    database = await createTempDatabase();
    const serverEnv = {
      NODE_ENV: 'production',
      ISSUER_ORIGIN: 'https://issuer.example.com',
      ALLOW_INSECURE_UPSTREAM: '1',
      DATABASE_URL: database.url,
      KEY_ENCRYPTION_KEY: KEK,
      SCHEMAS_DIR: resolve('schemas'),
    };
    // The first start imports the KEYS_DIR files, the Iden3 key among them, sealed under KEK.
    issuer = await startIssuer({
      dir,
      env: serverEnv,
      exampleClaimsFile: '',
      prepare: async () => {
        await generateMissingKeys(join(dir, 'keys'), { production: true });
      },
    });
    env = {
      ...serverEnv,
      KEYS_DIR: join(dir, 'keys'),
      API_KEY: TEST_API_KEY,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      PARTNER_ID: TEST_PARTNER_ID,
      SERVICE_V1_BASE_URL: issuer.ctx.config.serviceBaseUrl!,
    };
  });
  afterAll(async () => {
    await issuer?.close();
    await database?.drop();
    removeDir(dir);
  });

  const iden3Row = () =>
    queryStore<{ public_key: string; sealed: string }>(
      issuer.ctx.store,
      'SELECT public_key, sealed FROM iden3_key',
    );
  const doctor = async (extra: Record<string, string> = {}) => {
    const run = await runCli(['doctor', '--json', '--origin', issuer.url], { ...env, ...extra }, dir);
    const { items } = JSON.parse(run.stdout) as { items: DoctorLine[] };
    const fails = items.filter((l) => l.verdict === 'FAIL').map((l) => l.item);
    return { code: run.code, line: items.find((l) => l.item === 'iden3 key'), fails, text: run.stdout };
  };

  it('opens with KEY_ENCRYPTION_KEY: PASS, naming the key; exit 0', async () => {
    const publicKey = (await iden3Row())[0]?.public_key;
    expect(publicKey).toMatch(/^[0-9a-f]{64}$/);
    const run = await doctor();
    expect(run.fails).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.line).toEqual({
      item: 'iden3 key',
      verdict: 'PASS',
      detail: `${issuer.ctx.iden3Did()}, public key ${publicKey}: sealed in the database under KEY_ENCRYPTION_KEY; it opens`,
    });
  });

  // docs/security.md "Keys shared by several instances": after the import the files are plaintext
  // copies of what the database holds sealed.
  it('the private key files the first start imported: WARN naming them, gone once they are moved to backup', async () => {
    const keysDir = join(dir, 'keys');
    const { items } = JSON.parse((await doctor()).text) as { items: DoctorLine[] };
    const warned = items.find((l) => l.item === 'imported key files');
    expect(warned?.verdict).toBe('WARN');
    const keyFiles = readdirSync(keysDir).filter((f) =>
      /^(credential-signing|partner-jwt)-.*\.json$/.test(f),
    );
    expect(keyFiles.length).toBeGreaterThanOrEqual(2);
    for (const f of [...keyFiles, 'iden3-bjj.json']) expect(warned?.detail).toContain(f);
    expect(warned?.detail).toMatch(/move them to offline backup$/);
    const backup = join(dir, 'offline-backup');
    mkdirSync(backup);
    const moved = [...keyFiles, 'iden3-bjj.json'];
    for (const f of moved) renameSync(join(keysDir, f), join(backup, f));
    try {
      const after = await doctor();
      expect(after.fails).toEqual([]);
      expect(
        (JSON.parse(after.text) as { items: DoctorLine[] }).items.some(
          (l) => l.item === 'imported key files',
        ),
      ).toBe(false);
    } finally {
      for (const f of moved) renameSync(join(backup, f), join(keysDir, f));
    }
  });

  it('another KEY_ENCRYPTION_KEY: FAIL naming the variable, never the key; exit 1; nothing written', async () => {
    const before = await iden3Row();
    const run = await doctor({ KEY_ENCRYPTION_KEY: OTHER_KEK });
    expect(run.code).toBe(1);
    // The signing keys are sealed under the same KEK: `keys` fails with it (and so the documents'
    // comparisons with the local keys).
    expect(run.fails.slice(0, 2)).toEqual(['keys', 'iden3 key']);
    expect(run.line).toMatchObject({
      verdict: 'FAIL',
      detail: expect.stringMatching(
        /: sealed in the database, but does not open with KEY_ENCRYPTION_KEY: set KEY_ENCRYPTION_KEY to the key that sealed it$/,
      ),
    });
    for (const secret of [KEK, OTHER_KEK]) expect(run.text).not.toContain(secret);
    expect(await iden3Row()).toEqual(before);
  });

  it('a row that is not a sealed key at all: FAIL saying so, not blaming KEY_ENCRYPTION_KEY', async () => {
    const [before] = await iden3Row();
    await queryStore(issuer.ctx.store, 'UPDATE iden3_key SET sealed = $1', ['not-a-sealed-key']);
    try {
      const run = await doctor();
      expect(run.code).toBe(1);
      expect(run.line).toMatchObject({
        verdict: 'FAIL',
        detail: expect.stringMatching(/sealed: not a v1 sealed key$/),
      });
    } finally {
      await queryStore(issuer.ctx.store, 'UPDATE iden3_key SET sealed = $1', [before!.sealed]);
    }
    expect((await doctor()).line).toMatchObject({ verdict: 'PASS' });
  });

  it('sealed under KEY_ENCRYPTION_KEY_PREVIOUS: FAIL with the reseal command; after the reseal it passes', async () => {
    const rotated = { KEY_ENCRYPTION_KEY: OTHER_KEK, KEY_ENCRYPTION_KEY_PREVIOUS: KEK };
    const run = await doctor(rotated);
    expect(run.code).toBe(1);
    expect(run.line).toMatchObject({
      verdict: 'FAIL',
      detail: expect.stringMatching(
        /: sealed under KEY_ENCRYPTION_KEY_PREVIOUS, not KEY_ENCRYPTION_KEY .*: run npm run admin -- keys reseal$/,
      ),
    });
    expect((await runCli(['keys', 'reseal'], { ...env, ...rotated }, dir)).code).toBe(0);
    const after = await doctor(rotated);
    expect(after.line).toMatchObject({ verdict: 'PASS' });
    expect(after.fails).toEqual([]);
    // Back to KEK, for any later test.
    const back = { KEY_ENCRYPTION_KEY: KEK, KEY_ENCRYPTION_KEY_PREVIOUS: OTHER_KEK };
    expect((await runCli(['keys', 'reseal'], { ...env, ...back }, dir)).code).toBe(0);
  });
});
