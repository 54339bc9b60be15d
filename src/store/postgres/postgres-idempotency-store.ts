import type { IdempotencyBegin, IdempotencyStore } from '../store.js';
import { type PgPool, withTransaction } from './database.js';

interface KeyRow {
  request_hash: string;
  status: number | null;
  response: string | null;
  created_at: Date;
}

/** Idempotency-Key rows (`status` NULL = the first request is still running, on some instance). */
export class PostgresIdempotencyStore implements IdempotencyStore {
  constructor(private readonly pool: PgPool) {}

  async begin(
    scope: string,
    key: string,
    requestHash: string,
    now: Date,
    staleMs: number,
  ): Promise<IdempotencyBegin> {
    for (;;) {
      const outcome = await withTransaction(
        this.pool,
        async (client): Promise<IdempotencyBegin | undefined> => {
          // The primary key settles which instance claims a new key.
          const inserted = await client.query(
            `INSERT INTO idempotency_keys (scope, key, request_hash, status, response, created_at)
           VALUES ($1, $2, $3, NULL, NULL, $4) ON CONFLICT (scope, key) DO NOTHING`,
            [scope, key, requestHash, now],
          );
          if (inserted.rowCount === 1) return { kind: 'started' };
          // Locked: of two instances finding the same stale claim, the second sees the first's retake.
          const { rows } = await client.query<KeyRow>(
            'SELECT request_hash, status, response, created_at FROM idempotency_keys WHERE scope = $1 AND key = $2 FOR UPDATE',
            [scope, key],
          );
          const row = rows[0];
          // Released between the insert and the read: try again.
          if (!row) return undefined;
          if (row.request_hash !== requestHash) return { kind: 'mismatch' };
          if (row.status !== null)
            return {
              kind: 'replay',
              status: row.status,
              body: JSON.parse(row.response ?? 'null') as unknown,
            };
          // A claim left by an instance that died mid-request.
          if (now.getTime() - row.created_at.getTime() > staleMs) {
            await client.query('UPDATE idempotency_keys SET created_at = $1 WHERE scope = $2 AND key = $3', [
              now,
              scope,
              key,
            ]);
            return { kind: 'started' };
          }
          return { kind: 'in-progress' };
        },
      );
      if (outcome) return outcome;
    }
  }

  async complete(scope: string, key: string, status: number, body: unknown): Promise<void> {
    await this.pool.query(
      'UPDATE idempotency_keys SET status = $1, response = $2 WHERE scope = $3 AND key = $4',
      [status, JSON.stringify(body ?? null), scope, key],
    );
  }

  async release(scope: string, key: string): Promise<void> {
    await this.pool.query('DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND status IS NULL', [
      scope,
      key,
    ]);
  }

  async prune(before: Date): Promise<number> {
    const { rowCount } = await this.pool.query('DELETE FROM idempotency_keys WHERE created_at < $1', [
      before,
    ]);
    return rowCount ?? 0;
  }
}
