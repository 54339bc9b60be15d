import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { type AppContext, createContext } from '../../src/context.js';
import { silentLogger } from '../../src/observability/logger.js';
import { removeDir, TEST_ADMIN_API_KEY, TEST_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable } from '../helpers/services.js';

const available = await postgresAvailable('the concurrent first-start test');

const INSTANCES = 6;
const ROUNDS = 8;

// docs/several-instances.md: instances starting together on an empty database agree on one Iden3
// identity. Each start below has its own empty KEYS_DIR (no shared disk) and its own pool.
describe.skipIf(!available)('instances starting together on an empty PostgreSQL database', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) removeDir(d);
  });

  const start = (databaseUrl: string, kek: string): Promise<AppContext> => {
    const dir = tempDir();
    dirs.push(dir);
    mkdirSync(join(dir, 'keys'));
    const { config, secrets } = loadConfig({
      NODE_ENV: 'test',
      ISSUER_ORIGIN: 'http://127.0.0.1:4999',
      DATABASE_URL: databaseUrl,
      KEY_ENCRYPTION_KEY: kek,
      KEYS_DIR: join(dir, 'keys'),
      API_KEY: TEST_API_KEY,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      PARTNER_ID: TEST_PARTNER_ID,
      // Never called: nothing is issued here.
      SERVICE_V1_BASE_URL: 'http://127.0.0.1:9/v1',
    });
    return createContext(config, secrets, { log: silentLogger() });
  };

  it(`all of ${INSTANCES} simultaneous first starts come up with the one Iden3 DID, ${ROUNDS} times over`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const db = await createTempDatabase();
      const kek = randomBytes(32).toString('hex');
      const started = await Promise.allSettled(Array.from({ length: INSTANCES }, () => start(db.url, kek)));
      const contexts = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      try {
        const failures = started.flatMap((s) => (s.status === 'rejected' ? [String(s.reason)] : []));
        expect(failures).toEqual([]);
        const dids = new Set(contexts.map((c) => c.iden3Did()));
        expect(dids.size).toBe(1);
        expect([...dids][0]).toMatch(/^did:iden3:/);
      } finally {
        await Promise.all(contexts.map((c) => c.close()));
        await db.drop();
      }
    }
  });

  it('a claims tree left without its identity still refuses the start', async () => {
    const db = await createTempDatabase();
    const kek = randomBytes(32).toString('hex');
    try {
      await (await start(db.url, kek)).close();
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        await client.query('DELETE FROM iden3_identity');
      } finally {
        await client.end();
      }
      await expect(start(db.url, kek)).rejects.toThrow(
        /^iden3_tree_roots: a claims tree exists without an identity/,
      );
    } finally {
      await db.drop();
    }
  });
});
