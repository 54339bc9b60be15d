import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { type AppContext, createContext } from '../../src/context.js';
import { silentLogger } from '../../src/observability/logger.js';
import { TEST_ADMIN_API_KEY, TEST_API_KEY, TEST_PARTNER_ID, tempDir } from './issuer.js';
import { createTempDatabase } from './services.js';

/**
 * One instance's start on a PostgreSQL database (docs/several-instances.md), in this process: its
 * own empty KEYS_DIR (no shared disk, listed in `dirs` for removal) and its own pool.
 */
export function startInstance(dirs: string[], databaseUrl: string, kek: string): Promise<AppContext> {
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
}

/**
 * `instances` simultaneous first starts on a new empty database, `rounds` times: every start comes
 * up, and all of a round's hold the one Iden3 DID.
 */
export async function firstStartsAgree(dirs: string[], instances: number, rounds: number): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    const db = await createTempDatabase();
    const kek = randomBytes(32).toString('hex');
    const started = await Promise.allSettled(
      Array.from({ length: instances }, () => startInstance(dirs, db.url, kek)),
    );
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
}
