import type { Store } from '../store.js';
import { openSqlite, type SqliteDatabase } from './database.js';
import { SqliteAuditStore, SqliteMetaStore } from './sqlite-audit-store.js';
import { SqliteClaimsStore } from './sqlite-claims-store.js';
import { SqliteCompromisedKeyStore } from './sqlite-compromised-key-store.js';
import { SqliteConsoleSessionStore } from './sqlite-console-session-store.js';
import { SqliteHistoryStore } from './sqlite-history-store.js';
import { SqliteIdempotencyStore } from './sqlite-idempotency-store.js';
import { SqliteIden3Store } from './sqlite-iden3-store.js';
import { SqliteIssuanceStore } from './sqlite-issuance-store.js';
import { SqliteLockStore } from './sqlite-lock-store.js';
import { SqliteOid4vciAuthorizationStore } from './sqlite-oid4vci-authorization-store.js';
import { SqliteOid4vciStore } from './sqlite-oid4vci-store.js';
import { SqliteReader } from './sqlite-reader.js';
import { SqliteRenewalStore } from './sqlite-renewal-store.js';
import { SqliteStatusJobStore } from './sqlite-status-job-store.js';
import { SqliteStatusStore } from './sqlite-status-store.js';
import { SqliteWebhookStore } from './sqlite-webhook-store.js';

export interface SqliteStore extends Store {
  kind: 'sqlite';
  /** The raw handle (tests and benchmarks read tables directly). */
  db: SqliteDatabase;
  /** With its synchronous `applyStatusChange` (tests race it against a status list build). */
  status: SqliteStatusStore;
  /** With its synchronous `insertEvent` (the webhook bench writes events inside its own transactions). */
  webhooks: SqliteWebhookStore;
}

export function openSqliteStore(path: string): SqliteStore {
  return sqliteStoreOn(openSqlite(path));
}

/** The store over an already open (and migrated) database: `doctor` opens it without migrating (inspect.ts). */
export function sqliteStoreOn(db: SqliteDatabase): SqliteStore {
  // docs/interface.md "Paging": counts and OFFSET pages off this thread, where a file can be opened again.
  const reader = db.memory ? undefined : new SqliteReader(db.name);
  const audit = new SqliteAuditStore(db, reader);
  const webhooks = new SqliteWebhookStore(db);
  const status = new SqliteStatusStore(db, audit, webhooks);
  const issuances = new SqliteIssuanceStore(db, audit, webhooks);
  return {
    kind: 'sqlite',
    db,
    issuances,
    status,
    audit,
    meta: new SqliteMetaStore(db),
    iden3: new SqliteIden3Store(db, status),
    claims: new SqliteClaimsStore(db, audit),
    history: new SqliteHistoryStore(db, reader),
    idempotency: new SqliteIdempotencyStore(db),
    webhooks,
    oid4vci: new SqliteOid4vciStore(db, audit, webhooks),
    oid4vciAuthorizations: new SqliteOid4vciAuthorizationStore(db),
    statusJobs: new SqliteStatusJobStore(db, audit, webhooks),
    compromisedKeys: new SqliteCompromisedKeyStore(db, audit),
    renewals: new SqliteRenewalStore(db, audit, webhooks),
    consoleSessions: new SqliteConsoleSessionStore(db),
    locks: new SqliteLockStore(db),
    async ping() {
      db.prepare('SELECT 1').get();
    },
    async close() {
      await reader?.close();
      // Writes queued for this turn's group commit are committed, not dropped with the connection.
      issuances.flushWrites();
      db.close();
    },
  };
}

/** The Iden3 storage of an open database alone (tests and benchmarks of the Iden3 back-end). */
export function sqliteIden3Store(db: SqliteDatabase): SqliteIden3Store {
  return new SqliteIden3Store(db, new SqliteStatusStore(db));
}
