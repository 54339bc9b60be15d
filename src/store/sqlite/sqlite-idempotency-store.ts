import type { IdempotencyBegin, IdempotencyStore } from '../store.js';
import type { SqliteDatabase } from './database.js';

interface KeyRow {
  request_hash: string;
  status: number | null;
  response: string | null;
  created_at: string;
}

/** Idempotency-Key rows of migration 001 (`status` NULL = the first request is still running). */
export class SqliteIdempotencyStore implements IdempotencyStore {
  private readonly stmts;

  constructor(private readonly db: SqliteDatabase) {
    this.stmts = {
      get: db.prepare<[string, string], KeyRow>(
        'SELECT request_hash, status, response, created_at FROM idempotency_keys WHERE scope = ? AND key = ?',
      ),
      insert: db.prepare(
        'INSERT INTO idempotency_keys (scope, key, request_hash, status, response, created_at) VALUES (?, ?, ?, NULL, NULL, ?)',
      ),
      retake: db.prepare('UPDATE idempotency_keys SET created_at = ? WHERE scope = ? AND key = ?'),
      complete: db.prepare(
        'UPDATE idempotency_keys SET status = ?, response = ? WHERE scope = ? AND key = ?',
      ),
      release: db.prepare('DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND status IS NULL'),
      prune: db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?'),
    };
  }

  async begin(
    scope: string,
    key: string,
    requestHash: string,
    now: Date,
    staleMs: number,
  ): Promise<IdempotencyBegin> {
    const run = this.db.transaction((): IdempotencyBegin => {
      const row = this.stmts.get.get(scope, key);
      if (!row) {
        this.stmts.insert.run(scope, key, requestHash, now.toISOString());
        return { kind: 'started' };
      }
      if (row.request_hash !== requestHash) return { kind: 'mismatch' };
      if (row.status !== null) {
        return { kind: 'replay', status: row.status, body: JSON.parse(row.response ?? 'null') as unknown };
      }
      // A claim left by a process that died mid-request.
      if (now.getTime() - new Date(row.created_at).getTime() > staleMs) {
        this.stmts.retake.run(now.toISOString(), scope, key);
        return { kind: 'started' };
      }
      return { kind: 'in-progress' };
    });
    return run.immediate();
  }

  async complete(scope: string, key: string, status: number, body: unknown): Promise<void> {
    this.stmts.complete.run(status, JSON.stringify(body ?? null), scope, key);
  }

  async release(scope: string, key: string): Promise<void> {
    this.stmts.release.run(scope, key);
  }

  async prune(before: Date): Promise<number> {
    return this.stmts.prune.run(before.toISOString()).changes;
  }
}
