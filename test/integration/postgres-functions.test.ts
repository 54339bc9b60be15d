import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateAll, readMigrations } from '../../src/store/postgres/database.js';
import { readFunctions, type SqlFunction } from '../../src/store/postgres/functions.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const available = await postgresAvailable('PostgreSQL repeatable functions');

// docs/architecture.md "Repeatable SQL functions": one file per function, applied after the
// numbered migrations and again whenever its checksum changes, under the migration lock.
describe.runIf(available)('PostgreSQL repeatable functions', () => {
  let db: TempDatabase;
  const pools: pg.Pool[] = [];
  const pool = () => {
    const p = new pg.Pool({ connectionString: db.url, max: 1 });
    pools.push(p);
    return p;
  };
  beforeAll(async () => {
    db = await createTempDatabase();
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await db?.drop();
  });

  const functions = readFunctions();
  const migrations = readMigrations();
  /** `record-issuances.sql` with a line added to its body. */
  const changed = (mark: string): SqlFunction[] =>
    functions.map((f) =>
      f.name === 'record-issuances.sql'
        ? {
            ...f,
            sql: f.sql.replace('BEGIN', `BEGIN\n  -- ${mark}`),
            checksum: `${f.checksum.slice(0, 56)}${mark}`,
          }
        : f,
    );
  const liveBody = async () =>
    (
      await pools[0]!.query<{ src: string }>(
        "SELECT string_agg(prosrc, '') AS src FROM pg_proc WHERE proname = 'record_issuances'",
      )
    ).rows[0]!.src;

  it('a fresh database gets every function once; an unchanged start applies none', async () => {
    expect(functions.map((f) => f.name)).toEqual(['record-issuance.sql', 'record-issuances.sql']);
    const p = pool();
    const first = await migrateAll(p, migrations, functions);
    expect(first.functions).toEqual(functions.map((f) => f.name));
    expect(await migrateAll(p, migrations, functions)).toEqual({ migrations: [], functions: [] });
    const { rows } = await p.query<{ name: string; checksum: string }>(
      'SELECT name, checksum FROM schema_functions ORDER BY name',
    );
    expect(rows).toEqual(functions.map((f) => ({ name: f.name, checksum: f.checksum })));
  });

  it('a changed file is applied once, by one of several instances starting together', async () => {
    const edited = changed('changed1');
    const started = await Promise.all(
      Array.from({ length: 4 }, () => migrateAll(pool(), migrations, edited)),
    );
    expect(started.flatMap((s) => s.functions)).toEqual(['record-issuances.sql']);
    expect(await liveBody()).toContain('-- changed1');
    expect((await migrateAll(pools[0]!, migrations, edited)).functions).toEqual([]);
  });

  it('an older release restarting does not replace a newer release’s definition', async () => {
    const newer = [...migrations, { ...migrations.at(-1)!, version: migrations.at(-1)!.version + 1 }];
    // The newer release: one more migration (already applied, as far as this test goes).
    await pools[0]!.query(
      'INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, now())',
      [newer.at(-1)!.version, 'newer.sql', newer.at(-1)!.checksum],
    );
    expect((await migrateAll(pools[0]!, newer, changed('newer'))).functions).toEqual([
      'record-issuances.sql',
    ]);
    expect((await migrateAll(pools[0]!, migrations, functions)).functions).toEqual([]);
    expect(await liveBody()).toContain('-- newer');
  });
});
