import { calculateJwkThumbprint, type JWK } from 'jose';
import { type HolderPublicKey, holderKeyFingerprint } from '../envelope/index.js';
import { pooledRandomBytes } from '../random-pool.js';
import { canonicalJson, sha256Hex } from './canonical.js';

/** What tells one issuance from another: its revocation nonce, its subject hash, its instants. */

/** JWT `iat`/`exp` are NumericDates: a record says the same whole second. */
export const wholeSeconds = (d: Date): Date => new Date(Math.floor(d.getTime() / 1000) * 1000);

// Nonces are random, unique and below 2^53 (exact as a JSON number); 0 is the Iden3 auth claim's.
export function randomRevocationNonce(): number {
  const n = Number(pooledRandomBytes(8).readBigUInt64BE() & 0x1f_ffff_ffff_ffffn);
  return n === 0 ? 1 : n;
}

/**
 * What makes a repeated hosted request the same issuance, beside its holder DID, schema and proof
 * type: the claims, the `cnf` key (RFC 7638 thumbprint) and the key the envelope is sealed to
 * (normalized). A new key is a new credential, so what is stored always opens with the key the
 * request sent.
 * docs/interface.md "Decisions where the hosting service's interface is silent"
 */
export async function issuanceSubjectHash(
  claims: Record<string, unknown>,
  holderJwk: JWK | undefined,
  encryptTo: HolderPublicKey | undefined,
): Promise<string> {
  return sha256Hex(
    canonicalJson({
      claims,
      cnf: holderJwk ? await calculateJwkThumbprint(holderJwk) : null,
      encryptTo: encryptTo ? holderKeyFingerprint(encryptTo) : null,
    }),
  );
}
