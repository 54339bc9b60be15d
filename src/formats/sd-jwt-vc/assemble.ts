import { createHash } from 'node:crypto';
import { Jwt, SDJwt } from '@sd-jwt/core';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { SD_DECOY, SD_DIGEST, SD_LIST_KEY } from '@sd-jwt/types';
import { Disclosure } from '@sd-jwt/utils';
import { pooledRandomBytes } from '../../random-pool.js';

/**
 * A synchronous SD-JWT VC issuance with the library's own pieces: `Disclosure` (encoding and
 * digest), `Jwt` (header and payload encoding), `SDJwt` (the `~` serialisation) and
 * `SDJwtVcInstance`'s reserved-name check. Only `pack` (`@sd-jwt/core` 0.19.0, src/index.ts) is
 * followed here step by step without its `await`s: the library's async `pack`, `digest`, signer and
 * salt generator cost a promise chain per claim, several times the hashing they wrap.
 * test/unit/formats/sd-jwt-vc/assemble.test.ts verifies our output with the library's verifier and
 * compares its structure with the library's own `issue()`.
 */

const SALT_HEX = 16; // @sd-jwt/crypto-nodejs generateSalt(16): 16 hex characters (8 random bytes)
const hash = {
  alg: 'sha-256',
  hasher: (data: string | ArrayBuffer) =>
    new Uint8Array(
      createHash('sha256')
        .update(typeof data === 'string' ? data : Buffer.from(data))
        .digest(),
    ),
};
/** The library's SD-JWT VC reserved-claim check and JWT encoding, which it keeps `protected`. */
class VcRules extends SDJwtVcInstance {
  check(frame: Record<string, unknown> | undefined): void {
    this.validateReservedFields(frame as never);
  }
}
class UnsignedJwt extends Jwt {
  unsigned(): string {
    return this.getUnsignedToken();
  }
}
const vcRules = new VcRules({});

/** Salts as the library's generator makes them, drawn from one random buffer per credential. */
class Salts {
  private hex = '';
  private at = 0;
  next(): string {
    if (this.at + SALT_HEX > this.hex.length) {
      this.hex = pooledRandomBytes(64).toString('hex');
      this.at = 0;
    }
    const salt = this.hex.slice(this.at, this.at + SALT_HEX);
    this.at += SALT_HEX;
    return salt;
  }
}

type Frame = Record<string, unknown> & { _sd?: Array<string | number>; _sd_decoy?: number };

function decoy(salts: Salts): string {
  return Buffer.from(hash.hasher(salts.next())).toString('base64url');
}

/** `@sd-jwt/core` `pack`, synchronous: same traversal, same digests, `_sd` sorted. */
function packSync(
  claims: unknown,
  frame: Frame | undefined,
  salts: Salts,
): { packedClaims: unknown; disclosures: Disclosure[] } {
  if (!frame) return { packedClaims: claims, disclosures: [] };
  const sd = frame[SD_DIGEST] ?? [];
  const decoyCount = frame[SD_DECOY] ?? 0;
  const disclosures: Disclosure[] = [];
  const recursive: Record<string, unknown> = {};
  for (const key in frame) {
    if (key === SD_DIGEST) continue;
    const packed = packSync((claims as Record<string, unknown>)[key], frame[key] as Frame, salts);
    recursive[key] = packed.packedClaims;
    disclosures.push(...packed.disclosures);
  }
  if (Array.isArray(claims)) {
    const packedClaims: unknown[] = [];
    for (let i = 0; i < claims.length; i++) {
      const claim = recursive[i] ? recursive[i] : claims[i];
      if (sd.includes(i)) {
        const disclosure = new Disclosure([salts.next(), claim]);
        packedClaims.push({ [SD_LIST_KEY]: disclosure.digestSync(hash) });
        disclosures.push(disclosure);
      } else {
        packedClaims.push(claim);
      }
    }
    for (let j = 0; j < decoyCount; j++) packedClaims.push({ [SD_LIST_KEY]: decoy(salts) });
    return { packedClaims, disclosures };
  }
  const packedClaims: Record<string, unknown> = {};
  const digests: string[] = [];
  for (const key in claims as Record<string, unknown>) {
    const claim = recursive[key] ? recursive[key] : (claims as Record<string, unknown>)[key];
    if (sd.includes(key)) {
      const disclosure = new Disclosure([salts.next(), key, claim]);
      digests.push(disclosure.digestSync(hash));
      disclosures.push(disclosure);
    } else {
      packedClaims[key] = claim;
    }
  }
  for (let j = 0; j < decoyCount; j++) digests.push(decoy(salts));
  if (digests.length > 0) packedClaims[SD_DIGEST] = digests.sort();
  return { packedClaims, disclosures };
}

/**
 * The compact SD-JWT VC `SDJwtVcInstance.issue()` would make with signAlg ES256, hashAlg sha-256
 * and the key's signer (node:crypto, or the token of KEY_BACKEND=pkcs11): header
 * `{ typ: 'dc+sd-jwt', ...header, alg }`, payload the packed claims with `_sd_alg`, the
 * disclosures, and a trailing `~`. Packing is synchronous; only the signature is awaited.
 */
export async function issueSdJwtVc(
  payload: Record<string, unknown>,
  frame: Record<string, unknown> | undefined,
  options: { header: Record<string, unknown>; sign: (data: Uint8Array) => Promise<Uint8Array> },
): Promise<string> {
  vcRules.check(frame);
  const { packedClaims, disclosures } = packSync(payload, frame as Frame | undefined, new Salts());
  const header = { typ: 'dc+sd-jwt', ...options.header, alg: 'ES256' };
  const body = { ...(packedClaims as Record<string, unknown>), _sd_alg: frame ? 'sha-256' : undefined };
  const unsigned = new UnsignedJwt({ header, payload: body }).unsigned();
  const signature = Buffer.from(await options.sign(Buffer.from(unsigned))).toString('base64url');
  const jwt = new Jwt({ header, payload: body, signature, encoded: `${unsigned}.${signature}` });
  return new SDJwt({ jwt, disclosures }).encodeSDJwt();
}
