import type { InspectedMigration, StoreInspection } from '../engine.js';
import { compareChecksum } from '../migration-checksums.js';
import { readMigrations } from './database.js';
import { openPostgresStore, type PostgresStore } from './index.js';

/**
 * The database as it is, for `admin doctor`: connects without migrating. Writable means a primary
 * (not a read-only standby) on which this role may insert into `issuances`.
 */
export async function inspectPostgres(url: string, where: string): Promise<StoreInspection<PostgresStore>> {
  const inspection: StoreInspection<PostgresStore> = {
    where,
    problems: [],
    migrations: [],
    writable: false,
    environment: undefined,
    store: undefined,
    close: async () => {},
  };
  let store: PostgresStore | undefined;
  try {
    store = await openPostgresStore(url, { poolMax: 2, migrate: false });
    const { rows } = await store.pool.query<{ standby: boolean; migrations: string | null }>(
      "SELECT pg_is_in_recovery() AS standby, to_regclass('schema_migrations')::text AS migrations",
    );
    if (rows[0]?.standby) throw new Error('it is a read-only standby');
    const applied = new Map<number, { name: string; checksum: string }>();
    if (rows[0]?.migrations) {
      const done = await store.pool.query<{ version: number; name: string; checksum: string }>(
        'SELECT version, name, checksum FROM schema_migrations',
      );
      for (const r of done.rows) applied.set(r.version, r);
    }
    inspection.migrations = readMigrations().map(
      (m): InspectedMigration => ({
        name: m.name,
        checksum: m.checksum,
        state: !applied.has(m.version)
          ? 'pending'
          : compareChecksum(applied.get(m.version)!.checksum, m.checksum, m.previous) === 'changed'
            ? 'changed'
            : 'applied',
      }),
    );
    const pending = inspection.migrations.filter((m) => m.state === 'pending').map((m) => m.name);
    for (const m of inspection.migrations.filter((m) => m.state === 'changed'))
      inspection.problems.push(
        `DATABASE_URL: migration ${m.name} changed after it was applied (checksum differs)`,
      );
    if (pending.length > 0)
      inspection.problems.push(
        `DATABASE_URL: ${where} lacks migrations ${pending.join(', ')}; run npm run db:migrate or start the server once`,
      );
    if (inspection.problems.length > 0) {
      await store.close();
      return inspection;
    }
    const writable = await store.pool.query<{ ok: boolean }>(
      "SELECT has_table_privilege('issuances', 'INSERT') AS ok",
    );
    if (!writable.rows[0]?.ok) throw new Error('this role may not insert into issuances');
    inspection.writable = true;
    inspection.environment = await store.meta.get('environment');
    const opened = store;
    return { ...inspection, store: opened, close: () => opened.close() };
  } catch (err) {
    await store?.close().catch(() => undefined);
    inspection.problems.push(`DATABASE_URL: ${where}: ${(err as Error).message}`);
    return inspection;
  }
}
