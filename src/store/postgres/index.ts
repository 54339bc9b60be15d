import type pg from 'pg';
import type { Logger } from '../../model.js';
import type { DatabaseTimeouts } from '../engine.js';
import type { Store } from '../store.js';
import { createPool, migrate, type PgPool } from './database.js';
import { PostgresAuditStore, PostgresMetaStore } from './postgres-audit-store.js';
import { PostgresClaimsStore } from './postgres-claims-store.js';
import { PostgresCompromisedKeyStore } from './postgres-compromised-key-store.js';
import { PostgresConsoleSessionStore } from './postgres-console-session-store.js';
import { PostgresHistoryStore } from './postgres-history-store.js';
import { PostgresIdempotencyStore } from './postgres-idempotency-store.js';
import { PostgresIden3Store } from './postgres-iden3-store.js';
import { PostgresIssuanceStore } from './postgres-issuance-store.js';
import { PostgresKeyStore } from './postgres-key-store.js';
import { PostgresLockStore } from './postgres-lock-store.js';
import { PostgresOid4vciAuthorizationStore } from './postgres-oid4vci-authorization-store.js';
import { PostgresOid4vciStore } from './postgres-oid4vci-store.js';
import { PostgresRenewalStore } from './postgres-renewal-store.js';
import { PostgresStatusJobStore } from './postgres-status-job-store.js';
import { PostgresStatusStore } from './postgres-status-store.js';
import { PostgresWebhookStore } from './postgres-webhook-store.js';

export interface PostgresStore extends Store {
  kind: 'postgres';
  /** The pool (tests, the bench and `db copy` read tables directly). */
  pool: PgPool;
  /** Signing and partner keys shared by every instance (sealed with KEY_ENCRYPTION_KEY). */
  keys: PostgresKeyStore;
  /** Leased locks across instances (direct issuance's onDuplicate). */
  locks: PostgresLockStore;
}

export interface PostgresStoreOptions {
  /** Connections per instance (DATABASE_POOL_MAX). */
  poolMax: number;
  /** Apply pending migrations on open (default true; `npm run db:migrate` does it ahead of a deploy). */
  migrate?: boolean;
  log?: Logger | undefined;
  /** DATABASE_*_TIMEOUT_MS (default DEFAULT_DATABASE_TIMEOUTS). */
  timeouts?: DatabaseTimeouts | undefined;
}

/** A migration may rightly run long: it runs on its own connection without the statement bound. */
export async function migratePostgres(url: string, timeouts?: DatabaseTimeouts): Promise<string[]> {
  const pool = createPool(url, { poolMax: 1, timeouts: { ...timeouts, queryMs: 0 } });
  try {
    return await migrate(pool);
  } finally {
    await pool.end();
  }
}

/** Opens a pool on `url` and, unless told not to, brings the schema up to date first. */
export async function openPostgresStore(url: string, options: PostgresStoreOptions): Promise<PostgresStore> {
  if (options.migrate !== false) await migratePostgres(url, options.timeouts);
  const pool = createPool(url, options);
  return postgresStoreOn(pool, () => pool.end());
}

/**
 * The store over a pool already on a migrated schema; `end` closes what is the store's own (its
 * pool, or nothing when the pool is a tenant's view of a shared one: src/tenancy/schema-pool.ts).
 */
export function postgresStoreOn(pool: PgPool, end: () => Promise<void>): PostgresStore {
  const issuances = new PostgresIssuanceStore(pool);
  return {
    kind: 'postgres',
    pool,
    issuances,
    status: new PostgresStatusStore(pool),
    claims: new PostgresClaimsStore(pool),
    history: new PostgresHistoryStore(pool),
    idempotency: new PostgresIdempotencyStore(pool),
    iden3: new PostgresIden3Store(pool),
    keys: new PostgresKeyStore(pool),
    audit: new PostgresAuditStore(pool),
    meta: new PostgresMetaStore(pool),
    locks: new PostgresLockStore(pool),
    webhooks: new PostgresWebhookStore(pool),
    oid4vci: new PostgresOid4vciStore(pool),
    oid4vciAuthorizations: new PostgresOid4vciAuthorizationStore(pool),
    statusJobs: new PostgresStatusJobStore(pool),
    compromisedKeys: new PostgresCompromisedKeyStore(pool),
    renewals: new PostgresRenewalStore(pool),
    consoleSessions: new PostgresConsoleSessionStore(pool),
    async ping(timeoutMs) {
      // pg reads a per-query `query_timeout` (lib/client.js), which @types/pg does not declare.
      const query = { text: 'SELECT 1', query_timeout: timeoutMs } as pg.QueryConfig;
      await pool.query(timeoutMs === undefined ? 'SELECT 1' : query);
    },

    async close() {
      // The records and marks of the current turn are written, not dropped.
      await issuances.drain();
      await end();
    },
  };
}
