import type { SqliteDatabase } from './database.js';

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Pending {
  work: () => unknown;
  resolve: (value: never) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: the writes asked for in one event-loop turn commit together, in one
 * IMMEDIATE transaction, each inside its own savepoint. A commit appends every page it touched to
 * the WAL, and concurrent issuances touch the same ones (the table's last page, the tails of its
 * time-ordered indexes, the status partition's row), so one commit for a turn's writes writes each
 * such page once instead of once per issuance.
 *
 * Each write keeps its own outcome: one that throws rolls back its savepoint only and rejects
 * alone, and the others still commit. Nothing resolves before the commit has happened, so a caller
 * that awaits its write knows it is committed (the issuance is recorded before its upload). If the
 * transaction itself cannot begin or commit, or SQLite rolls all of it back (a full disk, an I/O
 * error), every write of the turn rejects with that error and none is kept.
 */
export class GroupCommit {
  private queue: Pending[] = [];
  private readonly group;
  private readonly savepoint;

  constructor(private readonly db: SqliteDatabase) {
    // better-sqlite3 runs a transaction function called inside another one as a SAVEPOINT.
    this.savepoint = db.transaction((work: () => unknown) => work());
    this.group = db.transaction((batch: Pending[]): Outcome[] =>
      batch.map((p): Outcome => {
        try {
          return { ok: true, value: this.savepoint(p.work) };
        } catch (error) {
          // Some errors (SQLITE_FULL, IOERR, NOMEM, a statement's BUSY) make SQLite roll back the
          // whole transaction, not the savepoint. Going on would run the turn's later writes each
          // in a transaction of its own, committed while the group fails: stop the group instead.
          if (!db.inTransaction) throw error;
          return { ok: false, error };
        }
      }),
    );
  }

  /** Runs `work` (synchronous statements) in the next group transaction; resolves once committed. */
  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: never) => void, reject });
      if (this.queue.length === 1) setImmediate(() => this.flush());
    });
  }

  /** Commits what is queued now rather than at the end of the turn (before the database closes). */
  flush(): void {
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    let outcomes: Outcome[];
    try {
      // Inside a transaction someone else opened on this connection, better-sqlite3 would run the
      // group as a savepoint of theirs: committed only when theirs is, not before we resolve.
      if (this.db.inTransaction)
        throw new Error('group commit: the connection is inside another transaction');
      outcomes = this.group.immediate(batch);
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.value as never);
      else p.reject(o.error);
    });
  }
}
