import {
  createECDH,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  ECDH,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import { invalidParameter } from '../errors.js';
import { EnvelopeError } from './envelope-error.js';
import type { HolderCurve, HolderPublicKey } from './types.js';

type EcCurve = Exclude<HolderCurve, 'x25519'>;

/** OpenSSL names, for `createECDH` and `generateKeyPairSync`. */
const OPENSSL_CURVE: Record<EcCurve, string> = { p256: 'prime256v1', secp256k1: 'secp256k1' };

interface SpkiForm {
  curve: HolderCurve;
  prefix: Buffer;
  pointLength: number;
  /** Allowed first byte of the point (SEC 1: 04 uncompressed, 02/03 compressed); none for X25519. */
  pointTags?: readonly number[];
}

// docs/security.md "Envelope encryption": the exact DER encodings accepted, fixed prefix + raw point. Matching bytes rather than
// asking OpenSSL keeps out explicit-parameter EC keys and hybrid points, and lets the hot path
// skip OpenSSL's DER decoder, which costs more than the ECDH itself.
const SPKI_FORMS: readonly SpkiForm[] = [
  { curve: 'x25519', prefix: Buffer.from('302a300506032b656e032100', 'hex'), pointLength: 32 },
  {
    curve: 'p256',
    prefix: Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex'),
    pointLength: 65,
    pointTags: [0x04],
  },
  {
    curve: 'p256',
    prefix: Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex'),
    pointLength: 33,
    pointTags: [0x02, 0x03],
  },
  {
    curve: 'secp256k1',
    prefix: Buffer.from('3056301006072a8648ce3d020106052b8104000a034200', 'hex'),
    pointLength: 65,
    pointTags: [0x04],
  },
  {
    curve: 'secp256k1',
    prefix: Buffer.from('3036301006072a8648ce3d020106052b8104000a032200', 'hex'),
    pointLength: 33,
    pointTags: [0x02, 0x03],
  },
];

const X25519_PREFIX = SPKI_FORMS[0]!.prefix;
const EC_UNCOMPRESSED_PREFIX: Record<EcCurve, Buffer> = {
  p256: SPKI_FORMS[1]!.prefix,
  secp256k1: SPKI_FORMS[3]!.prefix,
};

export function matchSpki(der: Buffer): { curve: HolderCurve; point: Buffer } | undefined {
  for (const form of SPKI_FORMS) {
    if (der.length !== form.prefix.length + form.pointLength) continue;
    if (!der.subarray(0, form.prefix.length).equals(form.prefix)) continue;
    const point = der.subarray(form.prefix.length);
    if (form.pointTags && !form.pointTags.includes(point[0]!)) continue;
    return { curve: form.curve, point };
  }
  return undefined;
}

export function x25519Spki(rawPublicKey: Buffer): Buffer {
  return Buffer.concat([X25519_PREFIX, rawPublicKey]);
}

export function ecSpki(curve: EcCurve, uncompressedPoint: Buffer): Buffer {
  return Buffer.concat([EC_UNCOMPRESSED_PREFIX[curve], uncompressedPoint]);
}

/** Through JWK, which Node imports without the (slow) OpenSSL DER decoder. */
function x25519PublicKeyObject(rawPublicKey: Buffer): KeyObject {
  return createPublicKey({
    key: { kty: 'OKP', crv: 'X25519', x: rawPublicKey.toString('base64url') },
    format: 'jwk',
  });
}

export function x25519RawPublicKey(key: KeyObject): Buffer {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const { x } = publicKey.export({ format: 'jwk' });
  if (x === undefined) throw new TypeError('X25519 key without a public value');
  return Buffer.from(x, 'base64url');
}

// ECDH objects work on raw (possibly compressed) points, so sealing never goes through DER.
export function ecdhFor(curve: EcCurve, privateKey?: KeyObject): ECDH {
  const ecdh = createECDH(OPENSSL_CURVE[curve]);
  if (privateKey === undefined) {
    ecdh.generateKeys();
    return ecdh;
  }
  const { d } = privateKey.export({ format: 'jwk' });
  if (d === undefined) throw new TypeError('EC key without a private scalar');
  ecdh.setPrivateKey(Buffer.from(d, 'base64url'));
  return ecdh;
}

// RFC 7748 §6.1 asks to refuse an all-zero X25519 output. That output happens exactly for the
// u-coordinates (mod p, top bit ignored) of the points of order dividing 8 on Curve25519 and its
// twist: 0, 1, p - 1 and the two below. OpenSSL refuses them at ECDH time; checking here turns that
// into a 400 on the field instead of a failed issuance.
const P25519 = 2n ** 255n - 19n;
const X25519_LOW_ORDER = new Set<bigint>([
  0n,
  1n,
  P25519 - 1n,
  0x00b8495f16056286fdb1329ceb8d09da6ac49ff1fae35616aeb8413b7c7aebe0n,
  0x57119fd0dd4e22d8868e1c58c45c44045bef839c55b1d0b1248c50a3bc959c5fn,
]);

/** RFC 7748 §5: the u-coordinate an X25519 public key stands for (top bit ignored, mod p). */
function x25519U(rawPublicKey: Buffer): bigint {
  const bigEndian = Buffer.from(rawPublicKey).reverse();
  bigEndian[0]! &= 0x7f;
  return BigInt(`0x${bigEndian.toString('hex')}`) % P25519;
}

const isLowOrderX25519 = (rawPublicKey: Buffer): boolean => X25519_LOW_ORDER.has(x25519U(rawPublicKey));

const HEX = /^(?:[0-9a-fA-F]{2})+$/;

export function decodeHex(input: unknown): Buffer | undefined {
  if (typeof input !== 'string') return undefined;
  const digits = input.startsWith('0x') || input.startsWith('0X') ? input.slice(2) : input;
  return HEX.test(digits) ? Buffer.from(digits, 'hex') : undefined;
}

/**
 * Validates a holder public key (docs/security.md "Envelope encryption"): hex, optional `0x`, of the DER SubjectPublicKeyInfo
 * of an X25519 (wire default), P-256 or secp256k1 key, EC points uncompressed or compressed.
 * Throws `invalidParameter(field, …)` for anything else, including points not on the curve and
 * small-order X25519 points.
 */
export function parseHolderPublicKey(hex: string, field: string): HolderPublicKey {
  const spkiDer = decodeHex(hex);
  if (spkiDer === undefined) throw invalidParameter(field, 'must be an even-length hex string');
  const match = matchSpki(spkiDer);
  if (match === undefined) {
    throw invalidParameter(
      field,
      'must be the DER SubjectPublicKeyInfo of an X25519, P-256 or secp256k1 public key',
    );
  }
  if (match.curve === 'x25519') {
    if (isLowOrderX25519(match.point)) throw invalidParameter(field, 'is a small-order X25519 point');
    return { curve: 'x25519', spkiDer, keyObject: x25519PublicKeyObject(match.point) };
  }
  try {
    // OpenSSL checks that the point is on the curve (and decompresses it).
    const keyObject = createPublicKey({ key: spkiDer, format: 'der', type: 'spki' });
    return { curve: match.curve, spkiDer, keyObject };
  } catch {
    throw invalidParameter(field, 'is not a valid point on the curve');
  }
}

/**
 * The same key whatever its encoding: the curve and its point in one form (EC points
 * uncompressed, SEC 1 §2.3.3; X25519 with the unused top bit cleared and reduced mod p, RFC 7748
 * §5), so that a key sent compressed once and uncompressed the next time counts as one key.
 */
export function holderKeyFingerprint(key: HolderPublicKey): string {
  const point = matchSpki(key.spkiDer)!.point;
  if (key.curve !== 'x25519') {
    const uncompressed = ECDH.convertKey(
      point,
      OPENSSL_CURVE[key.curve],
      undefined,
      undefined,
      'uncompressed',
    );
    return `${key.curve}:${(uncompressed as Buffer).toString('hex')}`;
  }
  return `x25519:${x25519U(point).toString(16).padStart(64, '0')}`;
}

export function keyCurve(key: KeyObject): HolderCurve | undefined {
  if (key.asymmetricKeyType === 'x25519') return 'x25519';
  if (key.asymmetricKeyType !== 'ec') return undefined;
  const named = key.asymmetricKeyDetails?.namedCurve;
  if (named === 'prime256v1') return 'p256';
  if (named === 'secp256k1') return 'secp256k1';
  return undefined;
}

// docs/security.md "Envelope encryption": the shared secret is the X25519 output, or the EC shared point's x-coordinate.
export function computeSharedSecret(privateKey: KeyObject, curve: HolderCurve, peerPoint: Buffer): Buffer {
  if (curve === 'x25519') return diffieHellman({ privateKey, publicKey: x25519PublicKeyObject(peerPoint) });
  return ecdhFor(curve, privateKey).computeSecret(peerPoint);
}

/**
 * A fresh key pair with both halves encoded by the key generation itself (SPKI and PKCS#8 DER).
 * Never `export()` a key that `generateKeyPairSync` has just returned: on Node 20 the export holds
 * the key's mutex while it allocates, and a garbage collection at that moment runs the finished
 * key-generation job's destructor, which takes the same mutex. The process then hangs for good
 * (seen here as a stuck process in a test run: gdb showed ExportJWKEdKey → GC → ~KeyGenJob →
 * pthread_mutex_lock). Encoding inside the generation happens while the job is still alive.
 */
export function generateEncodedKeyPair(curve: HolderCurve): { spki: Buffer; pkcs8: Buffer } {
  const publicKeyEncoding = { type: 'spki', format: 'der' } as const;
  const privateKeyEncoding = { type: 'pkcs8', format: 'der' } as const;
  const { publicKey, privateKey } =
    curve === 'x25519'
      ? generateKeyPairSync('x25519', { publicKeyEncoding, privateKeyEncoding })
      : generateKeyPairSync('ec', {
          namedCurve: OPENSSL_CURVE[curve],
          publicKeyEncoding,
          privateKeyEncoding,
        });
  return { spki: publicKey, pkcs8: privateKey };
}

/**
 * Holder side (emulator, demo, tests): a fresh key pair, with the public key in its wire form
 * (SPKI DER hex, EC points uncompressed) and the private key as PKCS#8 DER hex.
 */
export function generateHolderKeyPair(curve: HolderCurve = 'x25519'): {
  privateKey: KeyObject;
  publicKeyHex: string;
  privateKeyPkcs8Hex: string;
} {
  const { spki, pkcs8 } = generateEncodedKeyPair(curve);
  return {
    privateKey: createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }),
    publicKeyHex: spki.toString('hex'),
    privateKeyPkcs8Hex: pkcs8.toString('hex'),
  };
}

/**
 * Holder side: a private key from PKCS#8 DER hex (optional `0x`). Throws `EnvelopeError`
 * `HOLDER_KEY_INVALID` unless it is an X25519, P-256 or secp256k1 private key.
 */
export function privateKeyFromPkcs8Hex(hex: string): KeyObject {
  const der = decodeHex(hex);
  if (der === undefined) throw new EnvelopeError('HOLDER_KEY_INVALID', 'private key: not a hex string');
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } catch (cause) {
    throw new EnvelopeError('HOLDER_KEY_INVALID', 'private key: not a PKCS#8 DER private key', { cause });
  }
  if (keyCurve(key) === undefined) {
    throw new EnvelopeError('HOLDER_KEY_INVALID', 'private key: not an X25519, P-256 or secp256k1 key');
  }
  return key;
}
