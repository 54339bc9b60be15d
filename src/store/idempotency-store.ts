export type IdempotencyBegin =
  | { kind: 'started' }
  | { kind: 'replay'; status: number; body: unknown }
  /** The key was used with another request body. */
  | { kind: 'mismatch' }
  | { kind: 'in-progress' };

/** Idempotency-Key bookkeeping for admin routes: one row per (scope, key). */
export interface IdempotencyStore {
  /** Claims the key for a request, or says how it was used. An unfinished claim older than `staleMs` is taken over. */
  begin(
    scope: string,
    key: string,
    requestHash: string,
    now: Date,
    staleMs: number,
  ): Promise<IdempotencyBegin>;
  /** Stores the answer to replay. */
  complete(scope: string, key: string, status: number, body: unknown): Promise<void>;
  /** Forgets an unfinished claim (the request failed; a retry runs it again). */
  release(scope: string, key: string): Promise<void>;
  /** Drops keys created before `before`. */
  prune(before: Date): Promise<number>;
}
