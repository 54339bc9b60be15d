import { resolve } from 'node:path';
import type { StorageEngine } from '../engine.js';
import { openSqlite, runMigrations } from './database.js';
import { openSqliteStore, type SqliteStore } from './index.js';
import { inspectSqlite } from './inspect.js';

/** Where a `sqlite:` DATABASE_URL points. */
export interface SqliteTarget {
  kind: 'sqlite';
  path: string;
}

/**
 * SQLite, the embedded default: one file, keys as files in KEYS_DIR, one machine (several
 * processes on it share the file through WAL).
 */
export const sqliteEngine: StorageEngine<SqliteTarget, SqliteStore> = {
  kind: 'sqlite',
  name: 'SQLite',
  urlForm: 'sqlite:<path>',
  parse(url, cwd) {
    if (!url.startsWith('sqlite:')) return undefined;
    // sqlite:<path>; the URL-style sqlite://<relative> and sqlite:///<absolute> mean the same.
    const rest = url.slice('sqlite:'.length);
    const p = rest.startsWith('//') ? rest.slice(2) : rest;
    if (!p) return 'sqlite: needs a path, e.g. sqlite:./data/issuer.db';
    return { kind: 'sqlite', path: p === ':memory:' ? p : resolve(cwd, p) };
  },
  describe: (target) => `sqlite:${target.path}`,
  keysInDatabase: false,
  open: async (target) => openSqliteStore(target.path),
  async migrate(target) {
    const db = openSqlite(target.path, { migrate: false });
    try {
      return runMigrations(db);
    } finally {
      db.close();
    }
  },
  inspect: async (target) => inspectSqlite(target.path),
};
