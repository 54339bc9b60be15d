import { randomBytes } from 'node:crypto';
import { poseidon } from '@iden3/js-crypto';
import { describe, expect, it } from 'vitest';
import { FIELD_ORDER, poseidonHash, poseidonHashBytes } from '../../../../src/formats/iden3-bjj/poseidon.js';

// docs/dependencies.md: the kit's Poseidon is @iden3/js-crypto's function, for every
// width the merklizer, the tree and the signer use (1–16 inputs), on random field elements.

function randomFieldElement(): bigint {
  return BigInt(`0x${randomBytes(32).toString('hex')}`) % FIELD_ORDER;
}

const EDGES = [0n, 1n, FIELD_ORDER - 1n, FIELD_ORDER / 2n];

describe('poseidonHash', () => {
  it('equals js-crypto poseidon.hash for widths 1 to 16 on random and edge field elements', () => {
    for (let width = 1; width <= 16; width++) {
      for (let n = 0; n < 12; n++) {
        const inputs = Array.from({ length: width }, (_, i) =>
          n < EDGES.length ? EDGES[(n + i) % EDGES.length]! : randomFieldElement(),
        );
        expect(poseidonHash(inputs), `width ${width}`).toBe(poseidon.hash(inputs));
      }
    }
  });

  it('refuses no inputs, more than 16, and values outside the field, as js-crypto does', () => {
    for (const bad of [[], Array.from({ length: 17 }, () => 1n), [FIELD_ORDER], [-1n]]) {
      expect(() => poseidonHash(bad)).toThrow();
      expect(() => poseidon.hash(bad)).toThrow();
    }
  });
});

describe('poseidonHashBytes', () => {
  it('equals js-crypto poseidon.hashBytes (31-byte chunks, 16-input frames) for 1 to 1,100 bytes', () => {
    // 31 × 16 = 496 bytes a frame: the lengths cross one and two frame boundaries.
    for (const length of [1, 2, 30, 31, 32, 62, 465, 466, 495, 496, 497, 527, 960, 961, 992, 1100]) {
      const bytes = new Uint8Array(randomBytes(length));
      expect(poseidonHashBytes(bytes), `${length} bytes`).toBe(poseidon.hashBytes(bytes));
    }
    const text = new TextEncoder().encode('Ünïcödé ✓ 名前 https://issuer.example/vocab#givenName');
    expect(poseidonHashBytes(text)).toBe(poseidon.hashBytes(text));
  });
});
