import type { Store } from '../store.js';
import { openSqlite, type SqliteDatabase } from './database.js';
import { SqliteClaimsStore } from './sqlite-claims-store.js';
import { SqliteHistoryStore } from './sqlite-history-store.js';
import { SqliteIdempotencyStore } from './sqlite-idempotency-store.js';
import { SqliteIssuanceStore } from './sqlite-issuance-store.js';
import { SqliteStatusStore } from './sqlite-status-store.js';

export interface SqliteStore extends Store {
  /** The raw handle, for back-ends that persist their own tables (Iden3 trees). */
  db: SqliteDatabase;
  status: SqliteStatusStore;
}

export function openSqliteStore(path: string): SqliteStore {
  const db = openSqlite(path);
  return {
    db,
    issuances: new SqliteIssuanceStore(db),
    status: new SqliteStatusStore(db),
    claims: new SqliteClaimsStore(db),
    history: new SqliteHistoryStore(db),
    idempotency: new SqliteIdempotencyStore(db),
    async close() {
      db.close();
    },
  };
}
