import {
  createPrivateKey,
  createPublicKey,
  sign as cryptoSign,
  generateKeyPairSync,
  type JsonWebKey,
} from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { HeldKey, KeyBackend } from './key-backend.js';
import { KeyError } from './key-error.js';

/**
 * KEY_BACKEND=software (the default): the private key is the stored key's `privateJwk`, in a
 * KEYS_DIR file (mode 0600) or a database row sealed with KEY_ENCRYPTION_KEY, and node:crypto
 * signs with it in this process.
 */
export const softwareBackend: KeyBackend = {
  name: 'software',
  async generate() {
    const jwk = newP256Jwk();
    const kid = await calculateJwkThumbprint(jwk, 'sha256');
    return { kid, custody: { privateJwk: { ...jwk, kty: 'EC', kid, alg: 'ES256' } } };
  },
  async open(data, where) {
    if (!data.privateJwk) throw new KeyError(`${where}: privateJwk: the private part is missing`);
    const jwk = data.privateJwk as JWK;
    if (typeof jwk.d !== 'string') throw new KeyError(`${where}: privateJwk.d: the private part is missing`);
    let privateKey: ReturnType<typeof createPrivateKey>;
    try {
      privateKey = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' });
    } catch (err) {
      throw new KeyError(`${where}: privateJwk: not a valid key (${(err as Error).message})`);
    }
    const publicKey = createPublicKey(privateKey);
    // RFC 7518 §3.4: ES256 is r||s (IEEE P1363); RS256 is PKCS#1 v1.5 (§3.3).
    const dsaEncoding = jwk.kty === 'EC' ? 'ieee-p1363' : undefined;
    const held: HeldKey = {
      publicJwk: publicKey.export({ format: 'jwk' }) as JWK,
      publicKey,
      privateKey,
      custody: 'software',
      sign: (bytes) =>
        Promise.resolve(
          cryptoSign('sha256', bytes, dsaEncoding ? { key: privateKey, dsaEncoding } : privateKey),
        ),
    };
    return held;
  },
  async probe() {},
  async close() {},
};

/**
 * A new P-256 private key as a JWK, encoded by the generation itself: exporting a key that
 * `generateKeyPairSync` has just returned can deadlock Node 20 (src/envelope/keys.ts
 * `generateEncodedKeyPair` says how).
 */
function newP256Jwk(): JWK {
  const { privateKey } = generateKeyPairSync('ec', {
    namedCurve: 'P-256',
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'der' },
  });
  // A key object of our own (no key-generation job behind it) is safe to export.
  return createPrivateKey({ key: privateKey, format: 'der', type: 'pkcs8' }).export({ format: 'jwk' }) as JWK;
}
