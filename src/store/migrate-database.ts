import { type DatabaseTarget, parseDatabaseUrl, redactDatabaseUrl } from './database-url.js';
import { createPool, migrate } from './postgres/database.js';
import { openSqlite, runMigrations } from './sqlite/database.js';

/**
 * `npm run db:migrate`: applies the pending numbered migrations of the engine DATABASE_URL
 * selects, ahead of a deploy (a server applies them at start too). Returns what it applied.
 */
export async function migrateDatabase(
  databaseUrl: string,
  cwd: string,
): Promise<{ target: string; applied: string[] }> {
  const target: DatabaseTarget | string = parseDatabaseUrl(databaseUrl, cwd);
  if (typeof target === 'string') throw new Error(`DATABASE_URL: ${target}`);
  if (target.kind === 'sqlite') {
    const db = openSqlite(target.path, { migrate: false });
    try {
      return { target: `sqlite:${target.path}`, applied: runMigrations(db) };
    } finally {
      db.close();
    }
  }
  const pool = createPool(target.url, { poolMax: 1 });
  try {
    return { target: redactDatabaseUrl(target.url), applied: await migrate(pool) };
  } finally {
    await pool.end();
  }
}
