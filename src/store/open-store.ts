import type { Logger } from '../model.js';
import { parseDatabaseUrl } from './database-url.js';
import { openPostgresStore, type PostgresStore } from './postgres/index.js';
import { openSqliteStore, type SqliteStore } from './sqlite/index.js';

export type OpenedStore = SqliteStore | PostgresStore;

export interface OpenStoreOptions {
  /** PostgreSQL connections per instance (DATABASE_POOL_MAX, default 10). */
  poolMax?: number;
  /** Base of a relative sqlite: path (default the working directory). */
  cwd?: string;
  log?: Logger;
}

/**
 * The store DATABASE_URL selects (DESIGN §9): `sqlite:<path>` (embedded default) or
 * `postgres://…` / `postgresql://…`. Either applies its pending migrations before answering.
 */
export async function openStore(databaseUrl: string, options: OpenStoreOptions = {}): Promise<OpenedStore> {
  const target = parseDatabaseUrl(databaseUrl, options.cwd ?? process.cwd());
  if (typeof target === 'string') throw new Error(`DATABASE_URL: ${target}`);
  if (target.kind === 'sqlite') return openSqliteStore(target.path);
  return openPostgresStore(target.url, { poolMax: options.poolMax ?? 10, log: options.log });
}
