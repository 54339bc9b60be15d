/**
 * Leased locks across the processes on one database (PostgreSQL instances, SQLite workers). No
 * connection is held while locked; a holder that dies loses the lock when its lease ends.
 */
export interface NamedLockStore {
  /** Takes `name` for `owner` unless another owner holds an unexpired lease; returns whether taken. */
  tryAcquire(name: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Extends `owner`'s lease by `leaseMs` from now; false when it no longer holds it (the lease ran out and another took it). */
  renew(name: string, owner: string, leaseMs: number): Promise<boolean>;
  release(name: string, owner: string): Promise<void>;
}
