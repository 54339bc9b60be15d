import { hash } from 'node:crypto';
import { postgresUnavailable } from '../store/database-unavailable.js';
import {
  LOCK_SALT,
  PATH_FREE,
  type PgClient,
  type PgPool,
  POOL_SCHEMA,
  quoteIdent,
} from '../store/postgres/database.js';
import { POOL_CALLS, type SharedCalls } from '../store/postgres/shared-calls.js';

/** The schema a pooled connection's search_path is set to, kept on the connection. */
const SEARCH_PATH = Symbol('search_path');

/**
 * One tenant's view of the deployment's shared pool (docs/several-issuers.md
 * "Where the data lives"): every statement runs with search_path on the tenant's schema only, or
 * names that schema itself, so no table of another schema is named by any query. The path is set when a connection is checked out for
 * another schema than its last, before any transaction begins on it. Errors are what the shared
 * pool's own give (DatabaseUnavailableError for a lost connection); a connection whose statement
 * failed is released with the error, as pg-pool's `query` does. A statement that names the schema
 * itself (database.ts pathFree) runs on any connection without it, and the hot ones go with the
 * other tenants' of the turn through `calls` (shared-calls.ts). `end` leaves the shared pool open.
 */
export function schemaPool(shared: PgPool, schema: string, calls?: SharedCalls): PgPool {
  const setPath = `SET search_path TO ${quoteIdent(schema)}`;
  const connect = async (): Promise<PgClient> => {
    const client = (await shared.connect()) as PgClient & { [SEARCH_PATH]?: string };
    if (client[SEARCH_PATH] !== schema) {
      try {
        await client.query(setPath);
      } catch (err) {
        client.release(err as Error);
        throw postgresUnavailable(err) ?? err;
      }
      client[SEARCH_PATH] = schema;
    }
    return client;
  };
  const query = async (...args: unknown[]) => {
    // A statement naming its schema runs on any connection as it is (database.ts pathFree).
    if ((args[0] as { [PATH_FREE]?: boolean } | undefined)?.[PATH_FREE])
      return (shared.query as (...a: unknown[]) => Promise<unknown>)(...args).catch((err: unknown) => {
        throw postgresUnavailable(err) ?? err;
      });
    const client = await connect();
    try {
      // The arguments are pg's own (text and values, or a query config), passed on as they came.
      const result = await (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
      client.release();
      return result;
    } catch (err) {
      client.release(err as Error);
      throw postgresUnavailable(err) ?? err;
    }
  };
  const view = {
    query,
    connect,
    end: async () => undefined,
    on: () => view,
    get ending() {
      return shared.ending;
    },
    [POOL_SCHEMA]: schema,
    [POOL_CALLS]: calls,
    // public: the schema of a deployment adopted as a tenant keeps its lock keys.
    [LOCK_SALT]: schema === 'public' ? 0 : hash('sha256', schema, 'buffer').readInt32BE(0) & ~1,
  };
  // The stores use a pool's query and connect only (and `ending` for their messages).
  return view as unknown as PgPool;
}
