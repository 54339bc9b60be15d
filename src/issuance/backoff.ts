/**
 * Exponential backoff from `baseMs`, doubling per attempt (1-based) up to `maxMs`, with ±20 %
 * jitter so many retries (a fleet of pending uploads, parallel requests) do not run in lock-step.
 */
export function backoffWithJitter(attempt: number, baseMs: number, maxMs: number): number {
  const delay = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  return Math.round(delay * (0.8 + Math.random() * 0.4));
}
