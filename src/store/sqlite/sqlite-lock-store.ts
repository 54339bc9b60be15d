import type { NamedLockStore } from '../store.js';
import type { SqliteDatabase } from './database.js';

/**
 * Leased locks of migration 019, shared by the processes of one SQLite file (WORKERS=N): without
 * them each worker would decide direct issuance's onDuplicate and run the renewal sweep on its own.
 */
export class SqliteLockStore implements NamedLockStore {
  private readonly acquire;
  private readonly extend;
  private readonly remove;

  constructor(db: SqliteDatabase) {
    this.acquire = db.prepare<[string, string, number, number]>(
      `INSERT INTO named_locks (name, owner, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
       WHERE named_locks.expires_at < ?`,
    );
    this.extend = db.prepare<[number, string, string]>(
      'UPDATE named_locks SET expires_at = ? WHERE name = ? AND owner = ?',
    );
    this.remove = db.prepare<[string, string]>('DELETE FROM named_locks WHERE name = ? AND owner = ?');
  }

  async tryAcquire(name: string, owner: string, leaseMs: number): Promise<boolean> {
    const now = Date.now();
    return this.acquire.run(name, owner, now + leaseMs, now).changes === 1;
  }

  async renew(name: string, owner: string, leaseMs: number): Promise<boolean> {
    return this.extend.run(Date.now() + leaseMs, name, owner).changes === 1;
  }

  async release(name: string, owner: string): Promise<void> {
    this.remove.run(name, owner);
  }
}
