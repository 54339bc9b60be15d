import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/cli/doctor.js';
import { loadConfig } from '../../src/config/config.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { removeDir, TEST_ADMIN_API_KEY, TEST_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
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
