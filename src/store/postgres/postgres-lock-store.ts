import type { NamedLockStore } from '../store.js';
import type { PgPool } from './database.js';

/** Leased locks of migration 004; the server's clock decides expiry, so instance clocks may differ. */
export class PostgresLockStore implements NamedLockStore {
  constructor(private readonly pool: PgPool) {}

  async tryAcquire(name: string, owner: string, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query({
      name: 'pg-lock-acquire',
      text: `INSERT INTO named_locks (name, owner, expires_at)
        VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000))
        ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
        WHERE named_locks.expires_at < now()`,
      values: [name, owner, leaseMs],
    });
    return rowCount === 1;
  }

  async renew(name: string, owner: string, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query({
      name: 'pg-lock-renew',
      text: `UPDATE named_locks SET expires_at = now() + make_interval(secs => $3::float8 / 1000)
        WHERE name = $1 AND owner = $2`,
      values: [name, owner, leaseMs],
    });
    return rowCount === 1;
  }

  async release(name: string, owner: string): Promise<void> {
    await this.pool.query({
      name: 'pg-lock-release',
      text: 'DELETE FROM named_locks WHERE name = $1 AND owner = $2',
      values: [name, owner],
    });
  }
}
