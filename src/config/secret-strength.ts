/**
 * The production rule for API_KEY and ADMIN_API_KEY (`aaaa…` and 34 spaces passed a
 * length-only check, and a secret with spaces never matches a header value):
 * - at least 32 characters;
 * - visible ASCII only (0x21–0x7E): no whitespace, control or non-ASCII characters, which do not
 *   survive header transport;
 * - an estimated entropy of at least 96 bits, where the estimate is the length times the Shannon
 *   entropy of the secret's own character frequencies (−Σ p·log2 p over its distinct characters).
 *   `openssl rand -hex 16` (32 characters) estimates ≈115 bits, `openssl rand -base64 32` ≈210;
 *   a run of one character is 0, `abcd` repeated 10 times is 80. The estimate catches repetition
 *   and small alphabets, not every pattern (`abcdefgh…` passes): generate secrets, never type them.
 */
export const MIN_SECRET_LENGTH = 32;
export const MIN_SECRET_BITS = 96;

/** Estimated entropy in bits: length × Shannon entropy of the character distribution. */
export function estimatedEntropyBits(value: string): number {
  const counts = new Map<string, number>();
  for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1);
  const n = value.length;
  let perChar = 0;
  for (const k of counts.values()) perChar -= (k / n) * Math.log2(k / n);
  return n * perChar;
}

/** What is wrong with a production secret, or undefined. Never includes the value. */
export function secretProblem(value: string): string | undefined {
  if (value.length < MIN_SECRET_LENGTH) return `must be at least ${MIN_SECRET_LENGTH} characters`;
  if (!/^[\x21-\x7e]+$/.test(value))
    return 'must be visible ASCII characters only (no spaces, tabs, control or non-ASCII characters)';
  const bits = estimatedEntropyBits(value);
  if (bits < MIN_SECRET_BITS)
    return `looks too predictable (estimated ${Math.floor(bits)} bits of entropy, at least ${MIN_SECRET_BITS} needed; generate one, e.g. openssl rand -base64 32)`;
  return undefined;
}
