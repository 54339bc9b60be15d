import { describe, expect, it } from 'vitest';
import { pooledRandomBytes } from '../../src/random-pool.js';

// Salts, IVs and nonces come from one pooled CSPRNG buffer.
describe('pooledRandomBytes', () => {
  it('hands out each byte once, across pool refills, and keeps earlier views unchanged', () => {
    const first = pooledRandomBytes(12);
    const copy = Buffer.from(first);
    const seen = new Set<string>();
    // About 15 refills of the 4 KiB pool.
    for (let i = 0; i < 5000; i++) {
      const b = pooledRandomBytes(12);
      expect(b).toHaveLength(12);
      seen.add(b.toString('hex'));
    }
    expect(seen.size).toBe(5000);
    expect(first.equals(copy)).toBe(true);
  });

  it('serves sizes above the pool directly', () => {
    const big = pooledRandomBytes(10_000);
    expect(big).toHaveLength(10_000);
    expect(big.equals(Buffer.alloc(10_000))).toBe(false);
  });
});
