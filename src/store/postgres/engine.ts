import { redactDatabaseUrl } from '../database-url.js';
import type { StorageEngine } from '../engine.js';
import { migratePostgres, openPostgresStore, type PostgresStore } from './index.js';
import { inspectPostgres } from './inspect.js';

/** Where a `postgres://` DATABASE_URL points (`url` carries the password: keep it off logs). */
export interface PostgresTarget {
  kind: 'postgres';
  url: string;
}

/**
 * PostgreSQL: several instances on one database. Keys are kept in it, sealed under
 * KEY_ENCRYPTION_KEY, and named locks span the instances (docs/several-instances.md).
 */
export const postgresEngine: StorageEngine<PostgresTarget, PostgresStore> = {
  kind: 'postgres',
  name: 'PostgreSQL',
  urlForm: 'postgres://user[:password]@host[:port]/database',
  parse(url) {
    if (!/^postgres(ql)?:\/\//.test(url)) return undefined;
    try {
      new URL(url);
    } catch {
      return 'not a valid postgres:// URL';
    }
    return { kind: 'postgres', url };
  },
  describe: (target) => redactDatabaseUrl(target.url),
  keysInDatabase: true,
  open: (target, options) =>
    openPostgresStore(target.url, { poolMax: options.poolMax, log: options.log, timeouts: options.timeouts }),
  migrate: (target) => migratePostgres(target.url),
  inspect: (target) => inspectPostgres(target.url, redactDatabaseUrl(target.url)),
};
