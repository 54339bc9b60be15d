import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MigrationError, migrate, readMigrations } from '../../src/store/postgres/database.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const available = await postgresAvailable('PostgreSQL migration checksums');

// src/store/migration-checksums.ts: an applied migration may only have had its comments edited,
// and then its earlier checksum is listed beside it; anything else stops the start.
describe.runIf(available)('PostgreSQL migrations: earlier comment-only versions', () => {
  let db: TempDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTempDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    await migrate(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('a database recorded with an earlier checksum starts and is brought up to date; another checksum is refused', async () => {
    const edited = readMigrations().filter((m) => m.previous.length > 0);
    expect(edited.length).toBeGreaterThan(0);
    for (const m of edited)
      await pool.query('UPDATE schema_migrations SET checksum = $1 WHERE version = $2', [
        m.previous[0],
        m.version,
      ]);
    expect(await migrate(pool)).toEqual([]);
    const { rows } = await pool.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM schema_migrations',
    );
    for (const m of edited) expect(rows.find((r) => r.version === m.version)?.checksum).toBe(m.checksum);
    await pool.query('UPDATE schema_migrations SET checksum = $1 WHERE version = $2', [
      '0'.repeat(64),
      edited[0]!.version,
    ]);
    await expect(migrate(pool)).rejects.toThrow(MigrationError);
  });
});
