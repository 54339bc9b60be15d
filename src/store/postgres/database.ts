import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Logger } from '../../model.js';
import { postgresUnavailable } from '../database-unavailable.js';
import { type DatabaseTimeouts, DEFAULT_DATABASE_TIMEOUTS } from '../engine.js';
import { compareChecksum, previousChecksums } from '../migration-checksums.js';
import { applyFunctions, readFunctions, type SqlFunction } from './functions.js';

export type PgPool = pg.Pool;
export type PgClient = pg.PoolClient;
/** A pool or a client inside a transaction: what a single statement runs on. */
export type Queryable = Pick<pg.Pool, 'query'>;

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/**
 * Advisory lock keys (the two-int form, so they cannot meet a one-int lock of another tool on the
 * same database). The first int names this kit, the second the purpose.
 */
export const LOCK_NAMESPACE = 0x15_5e_0c_17;
export const LOCK_MIGRATIONS = 1;
/** Held (transaction-level) by every Iden3 tree and state write: one state history for all instances. */
export const LOCK_IDEN3 = 2;
/** Held by key imports and rotations. */
export const LOCK_KEYS = 3;
/** Second key: the 32-bit hash of (holder, schema, proof type, subject) of a hosted issuance. */
export const LOCK_DEDUPE_NAMESPACE = LOCK_NAMESPACE + 1;

/** Where a pool keeps the salt of its namespace's advisory locks (src/tenancy/schema-pool.ts). */
export const LOCK_SALT = Symbol('advisory lock salt');

/**
 * The first int of an advisory lock key on `pool`'s namespace. Advisory locks are database-wide:
 * the tenants' schemas of one database each take their own (docs/several-issuers.md
 * "Where the data lives"). The salt is even, so the kit's odd namespace and its even dedupe namespace stay
 * apart; without a salt (one issuer, or the adopted one) the keys are today's.
 */
export const lockSpace = (pool: object, space: number): number =>
  (space ^ ((pool as { [LOCK_SALT]?: number })[LOCK_SALT] ?? 0)) | 0;

/** A double-quoted identifier (the names passed here are ours: a tenant id is a DNS label). */
export const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** Where a tenant's view of the shared pool keeps its schema (src/tenancy/schema-pool.ts). */
export const POOL_SCHEMA = Symbol('schema');

/**
 * What goes before a name for it to mean `pool`'s namespace under any search_path: `"schema".`
 * on a tenant's view of the shared pool, nothing on a pool of its own (one issuer).
 */
export const schemaPrefix = (pool: object): string => {
  const schema = (pool as { [POOL_SCHEMA]?: string })[POOL_SCHEMA];
  return schema === undefined ? '' : `${quoteIdent(schema)}.`;
};

/** Marks a statement whose every name carries schemaPrefix (pathFree). */
export const PATH_FREE = Symbol('names its schema');

/**
 * A statement that names its schema (schemaPrefix) on every table and function: a tenant's view
 * of the shared pool runs it on whichever connection is free, without setting that connection's
 * search_path first (one round trip instead of two on the hot path).
 */
export const pathFree = <T extends object>(config: T): T => Object.assign(config, { [PATH_FREE]: true });

export interface PoolOptions {
  poolMax: number;
  log?: Logger | undefined;
  /** Defaults to DEFAULT_DATABASE_TIMEOUTS; `queryMs: 0` for statements that may rightly run long. */
  timeouts?: Partial<DatabaseTimeouts> | undefined;
}

/**
 * Added to the statement bound for the client's own give-up: the server cancels a slow statement
 * first (57014, the connection stays usable); the client's timer only fires when the server does not
 * answer at all, and that connection is then destroyed.
 */
const CLIENT_GRACE_MS = 1000;
/** TCP keepalive on idle pooled connections, so a dead peer is found without waiting for a query. */
const KEEPALIVE_DELAY_MS = 10_000;

/**
 * A pool whose every wait is bounded (docs/operations.md "Database unreachable") and whose
 * connection-level failures surface as DatabaseUnavailableError. A connection whose statement timed
 * out is destroyed, not returned: pg-pool's `query` releases it with the error, `withTransaction`
 * does the same.
 */
export function createPool(url: string, options: PoolOptions): PgPool {
  const timeouts = { ...DEFAULT_DATABASE_TIMEOUTS, ...options.timeouts };
  const connectMs = timeouts.connectMs;
  // pg-pool passes its own options to each new client; this gives the client its own connect bound
  // while the pool's connectionTimeoutMillis bounds the whole wait for a connection.
  class BoundedClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectMs });
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolMax,
    Client: BoundedClient,
    connectionTimeoutMillis: timeouts.acquireMs,
    ...(timeouts.queryMs > 0
      ? { statement_timeout: timeouts.queryMs, query_timeout: timeouts.queryMs + CLIENT_GRACE_MS }
      : {}),
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  });
  const unavailable = (err: unknown): never => {
    throw postgresUnavailable(err) ?? err;
  };
  // Only the promise forms are ours; pg-pool's `query` calls `connect` with a callback.
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = ((...args: unknown[]) => {
    const result = query(...args);
    return result instanceof Promise ? result.catch(unavailable) : result;
  }) as typeof pool.query;
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  pool.connect = ((...args: unknown[]) => {
    const result = connect(...args);
    return result instanceof Promise ? result.catch(unavailable) : result;
  }) as typeof pool.connect;
  // An idle connection dropped by the server emits here; unhandled it would end the process. The
  // pool replaces the connection on the next query, so a line in the log is all it needs. After
  // end() the connections still closing may be cut by the server: nothing to report then.
  pool.on('error', (err) => {
    if (pool.ending) return;
    const line = `postgres: idle connection lost: ${err.message}`;
    if (options.log) options.log.warn({ event: 'postgres_connection_lost', error: err.message }, line);
    else console.error(line);
  });
  return pool;
}

/**
 * Runs `fn` in one transaction that first takes the kit's transaction-level advisory lock for
 * `purpose` (LOCK_IDEN3, LOCK_KEYS) on `pool`'s namespace, released by COMMIT or ROLLBACK.
 */
export function withLockedTransaction<T>(
  pool: PgPool,
  purpose: number,
  fn: (client: PgClient) => Promise<T>,
): Promise<T> {
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1, $2)', [lockSpace(pool, LOCK_NAMESPACE), purpose]);
    return fn(client);
  });
}

/**
 * Runs `fn` in one transaction on one pooled connection; rolls back when it throws. When the
 * connection itself failed (timed out, lost) there is nothing to roll back on: it is destroyed,
 * which ends the transaction on the server, and the error is a DatabaseUnavailableError.
 */
export async function withTransaction<T>(
  pool: PgPool,
  fn: (client: PgClient) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    const down = postgresUnavailable(err);
    if (down) {
      broken = down;
      throw down;
    }
    await client.query('ROLLBACK').catch((rollbackErr: Error) => {
      broken = rollbackErr;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
  /** Checksums of earlier, comment-only versions of the file (migration-checksums.ts). */
  previous: readonly string[];
}

/** The numbered migrations of this engine (`migrations/NNN-name.sql`), in order. */
export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const previous = previousChecksums(dir);
  return readdirSync(dir)
    .filter((f) => /^\d{3}-[\w-]+\.sql$/.test(f))
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name), 'utf8');
      return {
        version: Number(name.slice(0, 3)),
        name,
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
        previous: previous.get(name) ?? [],
      };
    });
}

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/**
 * Applies pending migrations and changed functions (`migrateAll`); returns the migrations applied.
 * Given a list of migrations (a test's), applies those and no function.
 */
export async function migrate(pool: PgPool, migrations?: Migration[]): Promise<string[]> {
  return (await migrateAll(pool, migrations ?? readMigrations(), migrations ? [] : readFunctions()))
    .migrations;
}

/**
 * Applies pending migrations, each in its own transaction, then the repeatable functions whose file
 * is new or changed (functions.ts), and returns the names of each applied. Several instances
 * starting at once take turns on a connection-level advisory lock, and each re-reads what is
 * applied once it holds it, so every migration runs exactly once, and a changed function file is
 * applied once. An applied migration whose file changed since (checksum) stops the start: the
 * database is not what this code expects.
 */
export async function migrateAll(
  pool: PgPool,
  migrations = readMigrations(),
  functions: readonly SqlFunction[] = readFunctions(),
): Promise<{ migrations: string[]; functions: string[] }> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1, $2)', [lockSpace(pool, LOCK_NAMESPACE), LOCK_MIGRATIONS]);
    try {
      await client.query(
        `CREATE TABLE IF NOT EXISTS schema_migrations (
           version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`,
      );
      const { rows } = await client.query<{ version: number; name: string; checksum: string }>(
        'SELECT version, name, checksum FROM schema_migrations',
      );
      const applied = new Map(rows.map((r) => [r.version, r]));
      const done: string[] = [];
      for (const m of migrations) {
        const before = applied.get(m.version);
        if (before) {
          const seen = compareChecksum(before.checksum, m.checksum, m.previous);
          if (seen === 'changed')
            throw new MigrationError(
              `migration ${m.name} was applied as ${before.name} with checksum ${before.checksum.slice(0, 12)}…, but the file now has ${m.checksum.slice(0, 12)}…; a released migration must not change`,
            );
          if (seen === 'previous')
            await client.query('UPDATE schema_migrations SET checksum = $1 WHERE version = $2', [
              m.checksum,
              m.version,
            ]);
          continue;
        }
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query(
            'INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, now())',
            [m.version, m.name, m.checksum],
          );
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw new MigrationError(`migration ${m.name} failed: ${(err as Error).message}`);
        }
        done.push(m.name);
      }
      const level = Math.max(0, ...migrations.map((m) => m.version));
      return { migrations: done, functions: await applyFunctions(client, functions, level) };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, $2)', [
        lockSpace(pool, LOCK_NAMESPACE),
        LOCK_MIGRATIONS,
      ]);
    }
  } finally {
    client.release();
  }
}
