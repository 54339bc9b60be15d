import { createHash } from 'node:crypto';
import { Disclosure } from '@sd-jwt/utils';
import { refuse } from '../../verify/check.js';

// RFC 9901 §4.1.1 names the hash by its IANA "Named Information Hash Algorithm" name.
const HASHES: Record<string, string> = { 'sha-256': 'sha256', 'sha-384': 'sha384', 'sha-512': 'sha512' };
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The `_sd_alg` hasher the library's Disclosure takes (sha-256 when absent); refuses any other algorithm. */
export function sdHasher(sdAlg: unknown): { alg: string; hasher: (data: string) => Uint8Array } {
  const alg = sdAlg === undefined ? 'sha-256' : sdAlg;
  const node = typeof alg === 'string' ? HASHES[alg] : undefined;
  if (!node)
    return refuse('UNSUPPORTED_SD_ALG', `_sd_alg ${JSON.stringify(alg)} is not sha-256, sha-384 or sha-512`);
  return { alg: alg as string, hasher: (data) => new Uint8Array(createHash(node).update(data).digest()) };
}

interface Presented {
  encoded: string;
  digest: string;
  salt: string;
  /** Claim name of an object property disclosure; undefined for an array element disclosure. */
  name: string | undefined;
  value: unknown;
  used: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Sets an own member even when it is named `__proto__` (plain assignment would set the prototype). */
const put = (target: Record<string, unknown>, name: string, value: unknown): void => {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
};

/**
 * RFC 9901 §7.1 step 3, as a verifier must apply it: every disclosure decodes to a JSON array of
 * two (array element) or three (object property) members with a string salt; each digest in the
 * payload is met at most once (directly or inside disclosed values); a disclosed name is neither
 * `_sd` nor `...` nor already present at its level; and every presented disclosure is referenced by
 * exactly one digest. The library (`@sd-jwt/decode`) drops an unreferenced disclosure silently
 * and keeps a duplicated one; both are refused here. Answers the payload with the disclosed
 * claims in place and the selective-disclosure members removed.
 */
export function processDisclosures(
  payload: Record<string, unknown>,
  encodedDisclosures: readonly string[],
): { claims: Record<string, unknown>; disclosed: number } {
  const hash = sdHasher(payload._sd_alg);
  const byDigest = new Map<string, Presented>();
  for (const [i, encoded] of encodedDisclosures.entries()) {
    if (!BASE64URL.test(encoded)) refuse('DISCLOSURE_MALFORMED', `disclosure ${i + 1} is not base64url`);
    let raw: unknown;
    try {
      raw = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
    } catch {
      return refuse('DISCLOSURE_MALFORMED', `disclosure ${i + 1} does not decode to JSON`);
    }
    if (!Array.isArray(raw) || (raw.length !== 2 && raw.length !== 3) || typeof raw[0] !== 'string')
      refuse('DISCLOSURE_MALFORMED', `disclosure ${i + 1} is not a [salt, (name,) value] array`);
    const list = raw as unknown[];
    if (list.length === 3 && typeof list[1] !== 'string')
      refuse('DISCLOSURE_MALFORMED', `disclosure ${i + 1}: the claim name is not a string`);
    // The digest is over the disclosure as presented (RFC 9901 §4.2.3): the library's own decoder.
    const digest = Disclosure.fromEncodeSync(encoded, hash)._digest as string;
    if (byDigest.has(digest))
      refuse('DISCLOSURE_DUPLICATE', `disclosure ${i + 1} is presented more than once (digest ${digest})`);
    byDigest.set(digest, {
      encoded,
      digest,
      salt: list[0] as string,
      name: list.length === 3 ? (list[1] as string) : undefined,
      value: list[list.length - 1],
      used: false,
    });
  }

  const seen = new Set<string>();
  const meet = (digest: unknown): Presented | undefined => {
    if (typeof digest !== 'string')
      return refuse('DIGEST_MALFORMED', 'a digest in the payload is not a string');
    if (seen.has(digest))
      refuse('DIGEST_DUPLICATE', `digest ${digest} appears more than once in the payload`);
    seen.add(digest);
    const presented = byDigest.get(digest);
    if (presented) presented.used = true;
    return presented;
  };

  const walk = (value: unknown, path: string): unknown => {
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (const [i, element] of value.entries()) {
        if (isObject(element) && '...' in element) {
          if (Object.keys(element).length !== 1)
            refuse('DIGEST_MALFORMED', `${path}[${i}]: an array digest object has members besides "..."`);
          const d = meet(element['...']);
          if (!d) continue;
          if (d.name !== undefined)
            refuse(
              'DISCLOSURE_MALFORMED',
              `${path}[${i}]: an object property disclosure stands for an array element`,
            );
          out.push(walk(d.value, `${path}[${i}]`));
        } else out.push(walk(element, `${path}[${i}]`));
      }
      return out;
    }
    if (!isObject(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      if (key === '_sd' || (key === '_sd_alg' && path === '')) continue;
      put(out, key, walk(member, path ? `${path}.${key}` : key));
    }
    const digests = value._sd;
    if (digests === undefined) return out;
    if (!Array.isArray(digests))
      return refuse('DIGEST_MALFORMED', `${path || 'payload'}._sd is not an array`);
    for (const digest of digests) {
      const d = meet(digest);
      if (!d) continue;
      if (d.name === undefined)
        refuse(
          'DISCLOSURE_MALFORMED',
          `${path || 'payload'}: an array element disclosure stands for an object property`,
        );
      const name = d.name as string;
      if (name === '_sd' || name === '...')
        refuse('DISCLOSURE_RESERVED_NAME', `a disclosure names the reserved claim ${name}`);
      if (Object.hasOwn(out, name))
        refuse(
          'DISCLOSURE_NAME_CONFLICT',
          `${path ? `${path}.` : ''}${name} is both in the payload and disclosed`,
        );
      put(out, name, walk(d.value, path ? `${path}.${name}` : name));
    }
    return out;
  };

  const claims = walk(payload, '') as Record<string, unknown>;
  const unreferenced = [...byDigest.values()].filter((d) => !d.used);
  if (unreferenced.length > 0)
    refuse(
      'DISCLOSURE_UNREFERENCED',
      `${unreferenced.length} disclosure(s) not referenced by the issuer-signed payload: ${unreferenced
        .map((d) =>
          d.name === undefined ? `array element (digest ${d.digest})` : `${d.name} (digest ${d.digest})`,
        )
        .join(', ')}`,
    );
  return { claims, disclosed: byDigest.size };
}
