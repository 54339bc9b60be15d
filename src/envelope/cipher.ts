import {
  createCipheriv,
  createDecipheriv,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  type KeyObject,
} from 'node:crypto';
import { pooledRandomBytes } from '../random-pool.js';
import { EnvelopeError } from './envelope-error.js';
import {
  computeSharedSecret,
  ecdhFor,
  ecSpki,
  keyCurve,
  matchSpki,
  x25519RawPublicKey,
  x25519Spki,
} from './keys.js';
import type { Envelope, HolderPublicKey } from './types.js';

// docs/security.md "Envelope encryption" constants.
const HKDF_INFO = Buffer.from('data-enc-aes-256-gcm', 'utf8');
const HKDF_SALT = Buffer.alloc(0);
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

// docs/security.md "Envelope encryption" key derivation; exported for the vector tests.
export function deriveContentKey(sharedSecret: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', sharedSecret, HKDF_SALT, HKDF_INFO, KEY_BYTES));
}

function agreeWithHolder(
  holder: HolderPublicKey,
  fixedPrivateKey: KeyObject | undefined,
): { ephemeralSpki: Buffer; sharedSecret: Buffer } {
  if (fixedPrivateKey !== undefined) {
    if (keyCurve(fixedPrivateKey) !== holder.curve || fixedPrivateKey.type !== 'private') {
      throw new TypeError(`fixed ephemeral key must be a ${holder.curve} private key`);
    }
    const holderPoint = holderRawPoint(holder);
    const ephemeralSpki =
      holder.curve === 'x25519'
        ? x25519Spki(x25519RawPublicKey(fixedPrivateKey))
        : ecSpki(holder.curve, ecdhFor(holder.curve, fixedPrivateKey).getPublicKey());
    return { ephemeralSpki, sharedSecret: computeSharedSecret(fixedPrivateKey, holder.curve, holderPoint) };
  }
  // Hot path: one key generation and one ECDH. The ephemeral public key comes out of the
  // generation already as SPKI DER: exporting a just-generated key can deadlock Node 20 (see
  // generateEncodedKeyPair in keys.ts), and this runs once per issuance.
  if (holder.curve === 'x25519') {
    const { privateKey, publicKey } = generateKeyPairSync('x25519', {
      publicKeyEncoding: { type: 'spki', format: 'der' },
    } as never) as unknown as { privateKey: KeyObject; publicKey: Buffer }; // @types/node has no overload for one encoded half
    return {
      ephemeralSpki: publicKey,
      sharedSecret: diffieHellman({ privateKey, publicKey: holder.keyObject }),
    };
  }
  const ecdh = ecdhFor(holder.curve);
  return {
    ephemeralSpki: ecSpki(holder.curve, ecdh.getPublicKey()),
    sharedSecret: ecdh.computeSecret(holderRawPoint(holder)),
  };
}

function holderRawPoint(holder: HolderPublicKey): Buffer {
  const match = matchSpki(holder.spkiDer);
  if (match === undefined || match.curve !== holder.curve) {
    throw new TypeError('holder key was not produced by parseHolderPublicKey');
  }
  return match.point;
}

/**
 * docs/security.md "Envelope encryption": encrypts the UTF-8 of `JSON.stringify(value)` to the holder key with a fresh
 * ephemeral key and IV. `fixed` is for test vectors only.
 */
export function sealEnvelope(
  holder: HolderPublicKey,
  value: unknown,
  fixed?: { ephemeralPrivateKey: KeyObject; iv: Buffer },
): Envelope {
  const json = JSON.stringify(value) as string | undefined;
  if (json === undefined) throw new TypeError('envelope value is not JSON-serializable');
  if (fixed !== undefined && fixed.iv.length !== IV_BYTES) throw new TypeError('fixed IV must be 12 bytes');
  const { ephemeralSpki, sharedSecret } = agreeWithHolder(holder, fixed?.ephemeralPrivateKey);
  const iv = fixed?.iv ?? pooledRandomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', deriveContentKey(sharedSecret), iv, {
    authTagLength: TAG_BYTES,
  });
  const data = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()]);
  return {
    data: data.toString('base64'),
    iv: iv.toString('base64'),
    authTag: cipher.getAuthTag().toString('base64'),
    encryptedKey: ephemeralSpki.toString('base64'),
  };
}

/** Strict standard base64: Node's decoder skips invalid characters, so require a canonical round trip. */
function decodeBase64(value: unknown, field: keyof Envelope): Buffer {
  if (typeof value !== 'string') throw invalid(`${field}: missing or not a string`);
  const bytes = Buffer.from(value, 'base64');
  if (bytes.toString('base64') !== value) throw invalid(`${field}: not canonical standard base64`);
  return bytes;
}

function invalid(message: string, cause?: unknown): EnvelopeError {
  return new EnvelopeError('ENVELOPE_INVALID', message, cause === undefined ? undefined : { cause });
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Holder side: decrypts an envelope with the holder's private key and `JSON.parse`s the plaintext.
 * Throws `EnvelopeError` (`ENVELOPE_INVALID`) for bad base64, wrong lengths, an ephemeral key
 * that is not an accepted SPKI on the holder's curve, a wrong key or tampering, and a plaintext
 * that is not UTF-8 JSON; `HOLDER_KEY_INVALID` when the key is not an accepted private key.
 */
export function openEnvelope(holderPrivateKey: KeyObject, envelope: Envelope): unknown {
  const curve = keyCurve(holderPrivateKey);
  if (curve === undefined || holderPrivateKey.type !== 'private') {
    throw new EnvelopeError('HOLDER_KEY_INVALID', 'not an X25519, P-256 or secp256k1 private key');
  }
  if (typeof envelope !== 'object' || envelope === null) throw invalid('envelope: not an object');
  const data = decodeBase64(envelope.data, 'data');
  const iv = decodeBase64(envelope.iv, 'iv');
  const authTag = decodeBase64(envelope.authTag, 'authTag');
  const ephemeral = matchSpki(decodeBase64(envelope.encryptedKey, 'encryptedKey'));
  if (iv.length !== IV_BYTES) throw invalid('iv: must be 12 bytes');
  if (authTag.length !== TAG_BYTES) throw invalid('authTag: must be 16 bytes');
  if (ephemeral === undefined) throw invalid('encryptedKey: not an accepted DER SubjectPublicKeyInfo');
  if (ephemeral.curve !== curve) throw invalid(`encryptedKey: not a ${curve} key like the holder key`);

  let sharedSecret: Buffer;
  try {
    sharedSecret = computeSharedSecret(holderPrivateKey, curve, ephemeral.point);
  } catch (cause) {
    throw invalid('encryptedKey: key agreement failed', cause);
  }
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', deriveContentKey(sharedSecret), iv, {
      authTagLength: TAG_BYTES,
    });
    decipher.setAuthTag(authTag);
    plaintext = Buffer.concat([decipher.update(data), decipher.final()]);
  } catch (cause) {
    throw invalid('decryption failed: wrong key or tampered envelope', cause);
  }
  try {
    return JSON.parse(UTF8.decode(plaintext)) as unknown;
  } catch (cause) {
    throw invalid('plaintext is not UTF-8 JSON', cause);
  }
}
