import { accessSync, constants, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { InspectedMigration, StoreInspection } from '../engine.js';
import { looseDatabaseFiles, planMigrations, type SqliteDatabase } from './database.js';
import { type SqliteStore, sqliteStoreOn } from './index.js';

/**
 * The SQLite file as it is, for `admin doctor`: never created, never migrated. Writable means the
 * write lock can be taken (and is let go at once, nothing written).
 */
export function inspectSqlite(path: string): StoreInspection<SqliteStore> {
  const refused = (problem: string): StoreInspection<SqliteStore> => ({
    where: path,
    problems: [problem],
    migrations: [],
    writable: false,
    environment: undefined,
    store: undefined,
    close: async () => {},
  });
  if (path === ':memory:' || !existsSync(path))
    return refused(`DATABASE_URL: no database at ${path} (the server creates it at its first start)`);
  // Read before opening: opening may create the -wal and -shm files.
  const loose = looseDatabaseFiles(path).map(({ file, mode }) =>
    file === dirname(path)
      ? `DATABASE_URL: the database's folder ${file} is mode ${mode}: group or others may list it; chmod 700 ${file} (the server tightens it when it starts)`
      : `DATABASE_URL: ${file} is mode ${mode}: group or others may read the claims and issuance records; chmod 600 ${file} (the server tightens it when it starts)`,
  );
  let db: SqliteDatabase;
  try {
    accessSync(path, constants.R_OK | constants.W_OK);
    db = new Database(path, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    db.prepare('BEGIN IMMEDIATE').run();
    db.prepare('ROLLBACK').run();
  } catch (err) {
    return refused(`DATABASE_URL: ${path} is not writable (${(err as Error).message})`);
  }
  const plan = planMigrations(db);
  const migrations = plan.files.map(
    (f): InspectedMigration => ({
      name: f.name,
      checksum: f.sum,
      state: f.state === 'unrecorded-checksum' ? 'applied' : f.state,
    }),
  );
  const pending = migrations.filter((m) => m.state === 'pending').map((m) => m.name);
  const problems = [...plan.problems];
  if (pending.length > 0)
    problems.push(
      `DATABASE_URL: ${path} lacks migrations ${pending.join(', ')}; start the server once to apply them`,
    );
  if (problems.length > 0) {
    db.close();
    return { ...refused(''), problems, migrations, writable: true };
  }
  const environment = (
    db.prepare("SELECT value FROM meta WHERE key = 'environment'").get() as { value?: string } | undefined
  )?.value;
  const store = sqliteStoreOn(db);
  return {
    where: path,
    problems: loose,
    migrations,
    writable: true,
    environment,
    store,
    close: async () => {
      db.close();
    },
  };
}
