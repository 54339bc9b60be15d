import { createHash, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { SD_DECOY, SD_DIGEST, SD_LIST_KEY } from '@sd-jwt/types';
import { pooledRandomBytes } from '../../random-pool.js';

/**
 * A synchronous SD-JWT VC issuance following the library (`@sd-jwt/core` 0.19.0) step by step:
 * `pack` without its `await`s (the library's async `pack`, `digest`, signer and salt generator cost
 * a promise chain per claim, several times the hashing they wrap), `Disclosure.encode`/`digestSync`,
 * `Jwt.getUnsignedToken` and `SDJwt.encodeSDJwt`, with `SDJwtVcInstance`'s reserved-name check.
 * Encoding is Buffer's base64url of the JSON's UTF-8, which is what the library's js-base64
 * `encodeURI` produces, without its string round trips.
 * test/unit/issuers/sd-jwt-assemble.test.ts verifies our output with the library's verifier and
 * compares its structure with the library's own `issue()`.
 */

const SALT_HEX = 16; // @sd-jwt/crypto-nodejs generateSalt(16): 16 hex characters (8 random bytes)
const base64url = (json: string): string => Buffer.from(json, 'utf8').toString('base64url');
const sha256Base64url = (ascii: string): string =>
  createHash('sha256').update(ascii, 'latin1').digest('base64url');

/** RFC 9901 §4.2.1-4.2.3: the disclosure is base64url(JSON array); its digest hashes that ASCII string. */
interface Disclosure {
  encoded: string;
  digest: string;
}
function disclose(item: [string, unknown] | [string, string, unknown]): Disclosure {
  const encoded = base64url(JSON.stringify(item));
  return { encoded, digest: sha256Base64url(encoded) };
}
/** The library's SD-JWT VC reserved-claim check and JWT encoding, which it keeps `protected`. */
class VcRules extends SDJwtVcInstance {
  check(frame: Record<string, unknown> | undefined): void {
    this.validateReservedFields(frame as never);
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
  return sha256Base64url(salts.next());
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
        const disclosure = disclose([salts.next(), claim]);
        packedClaims.push({ [SD_LIST_KEY]: disclosure.digest });
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
      const disclosure = disclose([salts.next(), key, claim]);
      digests.push(disclosure.digest);
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
 * and a node:crypto signer: header `{ typ: 'dc+sd-jwt', ...header, alg }`, payload the packed
 * claims with `_sd_alg`, the disclosures, and a trailing `~`.
 */
export function issueSdJwtVcSync(
  payload: Record<string, unknown>,
  frame: Record<string, unknown> | undefined,
  options: { header: Record<string, unknown>; privateKey: KeyObject },
): string {
  vcRules.check(frame);
  const { packedClaims, disclosures } = packSync(payload, frame as Frame | undefined, new Salts());
  const header = { typ: 'dc+sd-jwt', ...options.header, alg: 'ES256' };
  const body = { ...(packedClaims as Record<string, unknown>), _sd_alg: frame ? 'sha-256' : undefined };
  const unsigned = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(body))}`;
  const signature = cryptoSign('sha256', Buffer.from(unsigned, 'latin1'), {
    key: options.privateKey,
    dsaEncoding: 'ieee-p1363',
  }).toString('base64url');
  // SDJwt.encodeSDJwt: the JWT, each disclosure, then an empty key-binding part: `jwt~d1~d2~`.
  let out = `${unsigned}.${signature}~`;
  for (const d of disclosures) out += `${d.encoded}~`;
  return out;
}
