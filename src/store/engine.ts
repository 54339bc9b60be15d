import type { Logger } from '../model.js';
import type { Store } from './store.js';

/**
 * A storage engine: one folder under `src/store/` whose `engine` export says which DATABASE_URLs
 * it takes, opens every part of the store at once, migrates, and inspects a database read-only.
 * `src/store/engines.ts` lists the engines; adding one is that folder plus one line there.
 */
export interface StorageEngine<T extends { kind: string }, S extends Store> {
  kind: T['kind'];
  /** The engine's name in messages (`PostgreSQL`). */
  name: string;
  /** The form of its DATABASE_URL, for the message that lists the accepted ones. */
  urlForm: string;
  /**
   * The target a DATABASE_URL names when it is this engine's (its scheme); a string is what is
   * wrong with it, worded for a config error line; undefined means another engine's URL.
   */
  parse(url: string, cwd: string): T | string | undefined;
  /** The target as messages show it, never with a password (`sqlite:<path>`, a redacted URL). */
  describe(target: T): string;
  /**
   * Private keys live in the database, sealed under KEY_ENCRYPTION_KEY, and the store has `keys`
   * (several instances share them); otherwise they are files in KEYS_DIR.
   */
  keysInDatabase: boolean;
  /** Every part of the store, with pending migrations applied first. */
  open(target: T, options: OpenOptions): Promise<S>;
  /** Applies pending migrations (`npm run db:migrate`); answers the names applied. */
  migrate(target: T): Promise<string[]>;
  /** What `admin doctor` needs to know of the database as it is: never creates, migrates or writes. */
  inspect(target: T): Promise<StoreInspection<S>>;
}

export interface OpenOptions {
  /** Connections per instance (DATABASE_POOL_MAX) where the engine pools them. */
  poolMax: number;
  /** How long a client-server engine waits for its server (DATABASE_*_TIMEOUT_MS). */
  timeouts?: DatabaseTimeouts | undefined;
  log?: Logger | undefined;
}

/**
 * Bounds on waiting for a database server, so that a silent network partition fails requests
 * (503) instead of holding them for as long as it lasts (docs/operations.md "Database unreachable").
 * 0 means unbounded (migrations and `db copy`, whose statements may rightly run long).
 */
export interface DatabaseTimeouts {
  /** Opening one connection: TCP, TLS and authentication (DATABASE_CONNECT_TIMEOUT_MS). */
  connectMs: number;
  /** One statement; the server cancels it, the client gives up shortly after (DATABASE_QUERY_TIMEOUT_MS). */
  queryMs: number;
  /** Waiting for a pooled connection, a free one or a new one (DATABASE_ACQUIRE_TIMEOUT_MS). */
  acquireMs: number;
}

export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = {
  connectMs: 5000,
  queryMs: 10_000,
  acquireMs: 10_000,
};

export interface InspectedMigration {
  name: string;
  /** sha256 of the migration file. */
  checksum: string;
  /** `changed`: applied, but the file's checksum differs from the one recorded then. */
  state: 'applied' | 'pending' | 'changed';
}

export interface StoreInspection<S extends Store = Store> {
  /** The database as doctor names it: the SQLite path, or the URL without its password. */
  where: string;
  /**
   * Why the database cannot serve as it is (absent, not writable, a standby, migrations pending
   * or changed), one line each starting `DATABASE_URL:` or naming the migration file. Empty when
   * it can.
   */
  problems: string[];
  /** Each migration this version knows, in order (empty when the database could not be read). */
  migrations: InspectedMigration[];
  /** The write lock could be taken (SQLite), or the server is a primary that lets this role insert (PostgreSQL). */
  writable: boolean;
  /** Meta `environment`: the kind of start that created the database (absent before the marker). */
  environment: string | undefined;
  /** The store over the database as it is, for reads, when `problems` is empty. */
  store: S | undefined;
  close(): Promise<void>;
}
