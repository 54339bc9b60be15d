import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config, Secrets } from '../config/config.js';
import type { Logger } from '../model.js';
import type { OpenedStore } from '../store/engines.js';
import { createPool, migrateAll, type PgPool, quoteIdent } from '../store/postgres/database.js';
import { postgresStoreOn } from '../store/postgres/index.js';
import { SharedCalls } from '../store/postgres/shared-calls.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { postgresTenantRegistry } from './postgres-tenant-registry.js';
import { schemaPool } from './schema-pool.js';
import { sqliteTenantRegistry } from './sqlite-tenant-registry.js';
import type { TenantRegistry } from './tenant-registry.js';

/** The namespace of the deployment's own data: a tenant registered on it adopted a single deployment. */
export const MAIN_NAMESPACE = 'main';

/**
 * The data namespaces of a `TENANCY=multi` deployment on one engine (docs/several-issuers.md
 * "Where the data lives"): a PostgreSQL schema per tenant on one shared pool, or an SQLite file
 * per tenant beside the deployment's. A tenant's store is opened on its namespace alone: its
 * queries cannot name another tenant's rows. The registry lives in the deployment's own.
 */
export interface Namespaces {
  registry: TenantRegistry;
  /** The namespace a new tenant `id` gets. */
  nameFor(id: string): string;
  exists(namespace: string): Promise<boolean>;
  /** The store of `namespace`, created and migrated as needed; closing it leaves the others open. */
  open(namespace: string): Promise<OpenedStore>;
  close(): Promise<void>;
}

export async function openNamespaces(
  config: Pick<Config, 'database'>,
  secrets: Pick<Secrets, 'database'>,
  log: Logger,
): Promise<Namespaces> {
  const target = secrets.database;
  if (target.kind === 'sqlite') {
    if (target.path === ':memory:') throw new Error('DATABASE_URL: TENANCY=multi needs a file, not :memory:');
    const folder = join(dirname(target.path), 'tenants');
    const fileOf = (ns: string) => (ns === MAIN_NAMESPACE ? target.path : join(folder, `${ns}.db`));
    const registry = sqliteTenantRegistry(target.path);
    return {
      registry,
      nameFor: (id) => id,
      exists: async (ns) => existsSync(fileOf(ns)),
      open: async (ns) => openSqliteStore(fileOf(ns)),
      close: () => registry.close(),
    };
  }
  const registry = await postgresTenantRegistry(target.url);
  const shared: PgPool = createPool(target.url, {
    poolMax: 'poolMax' in config.database ? config.database.poolMax : 10,
    timeouts: 'timeouts' in config.database ? config.database.timeouts : undefined,
    log,
  });
  // One SharedCalls for every tenant of the pool: their hot statements of a turn go together.
  const calls = new SharedCalls(shared);
  const schemaOf = (ns: string) => (ns === MAIN_NAMESPACE ? 'public' : ns);
  return {
    registry,
    nameFor: (id) => `tenant_${id.replace(/-/g, '_')}`,
    async exists(ns) {
      const { rows } = await shared.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schemaOf(ns)]);
      return rows.length > 0;
    },
    async open(ns) {
      const schema = schemaOf(ns);
      // Two instances creating it at once: the loser's IF NOT EXISTS can still meet the winner's row.
      await shared
        .query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`)
        .catch((err: { code?: string }) => {
          if (err.code !== '23505') throw err;
        });
      const pool = schemaPool(shared, schema, calls);
      await migrateAll(pool);
      return postgresStoreOn(pool, async () => undefined);
    },
    async close() {
      await registry.close();
      await shared.end();
    },
  };
}
