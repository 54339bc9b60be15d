import { ECDH } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  generateHolderKeyPair,
  holderKeyFingerprint,
  parseHolderPublicKey,
} from '../../../src/envelope/index.js';

const COMPRESSED_PREFIX = {
  p256: '3039301306072a8648ce3d020106082a8648ce3d030107032200',
  secp256k1: '3036301006072a8648ce3d020106052b8104000a032200',
} as const;
const OPENSSL_CURVE = { p256: 'prime256v1', secp256k1: 'secp256k1' } as const;

const fingerprint = (hex: string) => holderKeyFingerprint(parseHolderPublicKey(hex, 'pubKey'));

// One holder key, whatever its encoding, so a repeated /issue-vc with the same key is the same issuance.
describe('holderKeyFingerprint', () => {
  it.each(['p256', 'secp256k1'] as const)(
    'a %s key compressed and uncompressed (SEC 1 §2.3.3) is one key',
    (curve) => {
      const key = generateHolderKeyPair(curve);
      const spki = Buffer.from(key.publicKeyHex, 'hex');
      const compressed = ECDH.convertKey(
        spki.subarray(spki.length - 65),
        OPENSSL_CURVE[curve],
        undefined,
        undefined,
        'compressed',
      ) as Buffer;
      expect(fingerprint(`${COMPRESSED_PREFIX[curve]}${compressed.toString('hex')}`)).toBe(
        fingerprint(key.publicKeyHex),
      );
      expect(fingerprint(`0x${key.publicKeyHex.toUpperCase()}`)).toBe(fingerprint(key.publicKeyHex));
    },
  );

  it('an X25519 key with its unused top bit set (RFC 7748 §5) is the same key', () => {
    const key = generateHolderKeyPair('x25519');
    const spki = Buffer.from(key.publicKeyHex, 'hex');
    spki[spki.length - 1]! |= 0x80;
    expect(fingerprint(spki.toString('hex'))).toBe(fingerprint(key.publicKeyHex));
  });

  it('different keys and curves differ', () => {
    const seen = new Set(
      (['x25519', 'x25519', 'p256', 'p256', 'secp256k1'] as const).map((c) =>
        fingerprint(generateHolderKeyPair(c).publicKeyHex),
      ),
    );
    expect(seen.size).toBe(5);
  });
});
