import { randomBytes } from 'node:crypto';

const POOL_BYTES = 4096;
let pool = randomBytes(POOL_BYTES);
let at = 0;

/**
 * `randomBytes(n)` served from a pooled CSPRNG buffer, as node:crypto's own `randomUUID` does: one
 * call per 4 KiB instead of one per salt, IV or nonce (each a visible share of an issuance's CPU).
 * Every byte is handed out once. The result is a view into the pool: read it, do not write to it.
 */
export function pooledRandomBytes(n: number): Buffer {
  if (n > POOL_BYTES) return randomBytes(n);
  if (at + n > POOL_BYTES) {
    // A new buffer, not a refill in place: views handed out before stay as they were.
    pool = randomBytes(POOL_BYTES);
    at = 0;
  }
  const out = pool.subarray(at, at + n);
  at += n;
  return out;
}
