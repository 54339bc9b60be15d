import { createHash } from 'node:crypto';
import { babyJub, PrivateKey, PublicKey, Signature } from '@iden3/js-crypto';
import { describe, expect, it } from 'vitest';
import {
  BJJ_SUBGROUP_ORDER,
  BjjSigner,
  BN254_FIELD_ORDER,
  packBjjPoint,
} from '../../../src/formats/iden3-bjj/bjj-signer.js';

// docs/dependencies.md: the hand-written EdDSA-Poseidon signer must be js-crypto's scheme byte for byte.

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

// Fixed keys: circomlib's test key, all-zero / all-0xff edge keys, and sha256-derived ones.
const KEYS: Uint8Array[] = [
  Buffer.from('0001020304050607080900010203040506070809000102030405060708090001', 'hex'),
  new Uint8Array(32),
  new Uint8Array(32).fill(0xff),
  ...Array.from({ length: 8 }, (_, i) => createHash('sha256').update(`issuer-kit bjj key ${i}`).digest()),
];

// Fixed messages: small values, field edges, and sha256-derived field elements.
const MESSAGES: bigint[] = [
  0n,
  1n,
  1234n,
  BN254_FIELD_ORDER - 1n,
  BJJ_SUBGROUP_ORDER,
  ...Array.from(
    { length: 4 },
    (_, i) => BigInt(`0x${createHash('sha256').update(`message ${i}`).digest('hex')}`) % BN254_FIELD_ORDER,
  ),
];

describe('BjjSigner (EdDSA-Poseidon on @noble/curves) vs @iden3/js-crypto', () => {
  it('derives the same public key (point and compressed form)', () => {
    for (const sk of KEYS) {
      const ours = new BjjSigner(sk);
      const ref = new PrivateKey(Uint8Array.from(sk)).public();
      expect(ours.publicKey).toEqual(ref.p);
      expect(hex(ours.publicKeyCompressed())).toBe(ref.hex());
    }
  });

  it('packs points as babyJub.packPoint', () => {
    for (const sk of KEYS) {
      const p = new BjjSigner(sk).publicKey;
      expect(hex(packBjjPoint(p))).toBe(hex(babyJub.packPoint([p[0], p[1]])));
    }
  });

  it('signs byte-identically to PrivateKey.signPoseidon for fixed keys and messages', () => {
    // Keys x messages, minus a few pairs: js-crypto signs at ~24/s, so the full grid would be slow.
    let compared = 0;
    for (const [i, sk] of KEYS.entries()) {
      const ours = new BjjSigner(sk);
      const ref = new PrivateKey(Uint8Array.from(sk));
      for (const [j, msg] of MESSAGES.entries()) {
        if ((i + j) % 2 === 1) continue;
        const expected = ref.signPoseidon(msg);
        const sig = ours.sign(msg);
        expect(sig.R8).toEqual(expected.R8);
        expect(sig.S).toBe(expected.S);
        expect(hex(ours.signCompressed(msg))).toBe(hex(expected.compress()));
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(40);
  });

  it('is deterministic (same key and message, same bytes)', () => {
    const signer = new BjjSigner(KEYS[3]!);
    expect(hex(signer.signCompressed(42n))).toBe(hex(new BjjSigner(KEYS[3]!).signCompressed(42n)));
    expect(hex(signer.signCompressed(42n))).not.toBe(hex(signer.signCompressed(43n)));
  });

  it('produces signatures js-crypto verifyPoseidon accepts, and rejects once altered', () => {
    for (const sk of KEYS.slice(0, 4)) {
      const signer = new BjjSigner(sk);
      const pub = PublicKey.newFromCompressed(signer.publicKeyCompressed());
      const msg = MESSAGES[6]!;
      const bytes = signer.signCompressed(msg);
      const sig = Signature.newFromCompressed(Uint8Array.from(bytes));
      expect(pub.verifyPoseidon(msg, sig)).toBe(true);

      // Altered message.
      expect(pub.verifyPoseidon(msg + 1n, sig)).toBe(false);
      // Altered S.
      const sAltered = new Signature(sig.R8, (sig.S + 1n) % BJJ_SUBGROUP_ORDER);
      expect(pub.verifyPoseidon(msg, sAltered)).toBe(false);
      // Altered R8 (another valid curve point).
      const other = new BjjSigner(KEYS[10]!).publicKey;
      expect(pub.verifyPoseidon(msg, new Signature([other[0], other[1]], sig.S))).toBe(false);
      // Another signer's key.
      const otherPub = new PublicKey([other[0], other[1]]);
      expect(otherPub.verifyPoseidon(msg, sig)).toBe(false);
    }
  });

  it('rejects messages outside the field and keys of the wrong length', () => {
    const signer = new BjjSigner(KEYS[0]!);
    expect(() => signer.sign(BN254_FIELD_ORDER)).toThrow(RangeError);
    expect(() => signer.sign(-1n)).toThrow(RangeError);
    expect(() => new BjjSigner(new Uint8Array(31))).toThrow();
  });
});
