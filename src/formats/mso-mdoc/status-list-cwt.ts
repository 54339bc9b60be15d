import { type KeyObject, verify as verifySignature } from 'node:crypto';
import { cborDecode, cborEncode } from '@animo-id/mdoc';
import { decodeJwt } from 'jose';
import type { Sign } from '../../keys/key-backend.js';

/**
 * The CWT form of a Status List Token (draft-ietf-oauth-status-list §5.2), which mdoc verifiers
 * read: a tagged COSE_Sign1 (RFC 9052 §4.2) whose protected header names ES256 and the type
 * `application/statuslist+cwt`, whose unprotected header carries the key id and the document
 * signer certificate (`x5chain`), and whose payload holds the same claims as the JWT form.
 */
export const STATUS_LIST_CWT_MEDIA_TYPE = 'application/statuslist+cwt';

// RFC 9052 header labels, RFC 8392 and draft-ietf-oauth-status-list §5.2 claim keys.
const ALG = 1;
const KID = 4;
const TYP = 16;
const X5CHAIN = 33;
const ES256 = -7;
const SUB = 2;
const EXP = 4;
const IAT = 6;
const TTL = 65534;
const STATUS_LIST = 65533;
/** CBOR tag 18 (COSE_Sign1), major type 6: one byte before the array. */
const COSE_SIGN1_TAG = 0xd2;

interface JwtStatusListClaims {
  sub: string;
  iat: number;
  exp?: number;
  ttl?: number;
  status_list: { bits: number; lst: string };
}

/** The claims of a Status List Token JWT, signed again as a CWT with the same key. */
export async function statusListCwt(
  jwt: string,
  key: { sign: Sign; kid: string; certificate: Uint8Array },
): Promise<Uint8Array> {
  const claims = decodeJwt(jwt) as unknown as JwtStatusListClaims;
  const payload = new Map<number, unknown>([
    [SUB, claims.sub],
    [IAT, claims.iat],
  ]);
  if (claims.exp !== undefined) payload.set(EXP, claims.exp);
  if (claims.ttl !== undefined) payload.set(TTL, claims.ttl);
  payload.set(
    STATUS_LIST,
    new Map<string, unknown>([
      ['bits', claims.status_list.bits],
      ['lst', new Uint8Array(Buffer.from(claims.status_list.lst, 'base64url'))],
    ]),
  );
  const protectedHeader = cborEncode(
    new Map<number, unknown>([
      [ALG, ES256],
      [TYP, STATUS_LIST_CWT_MEDIA_TYPE],
    ]),
  );
  const encodedPayload = cborEncode(payload);
  const toBeSigned = cborEncode(['Signature1', protectedHeader, new Uint8Array(), encodedPayload]);
  const signature = new Uint8Array(await key.sign(toBeSigned));
  const unprotected = new Map<number, unknown>([
    [KID, new Uint8Array(Buffer.from(key.kid))],
    [X5CHAIN, key.certificate],
  ]);
  const body = cborEncode([protectedHeader, unprotected, encodedPayload, signature]);
  const out = new Uint8Array(body.length + 1);
  out[0] = COSE_SIGN1_TAG;
  out.set(body, 1);
  return out;
}

export interface DecodedStatusListCwt {
  sub: string;
  iat: number;
  exp: number | undefined;
  bits: number;
  /** The list as the JWT form carries it (base64url of the compressed bytes). */
  lst: string;
  verify(publicKey: KeyObject): boolean;
}

/** Reads a CWT Status List Token; throws what is malformed. `verify` checks its ES256 signature. */
export function decodeStatusListCwt(bytes: Uint8Array): DecodedStatusListCwt {
  // The library's decoder reads the COSE_Sign1 tag into its own class; the array is what we need.
  const raw = bytes[0] === COSE_SIGN1_TAG ? bytes.subarray(1) : bytes;
  const parts = cborDecode(raw) as unknown;
  if (!Array.isArray(parts) || parts.length !== 4) throw new Error('not a COSE_Sign1');
  const [protectedHeader, , encodedPayload, signature] = parts as [
    Uint8Array,
    unknown,
    Uint8Array,
    Uint8Array,
  ];
  const header = cborDecode(protectedHeader) as Map<number, unknown>;
  if (header.get(ALG) !== ES256) throw new Error(`alg ${String(header.get(ALG))} is not ES256 (-7)`);
  if (header.get(TYP) !== STATUS_LIST_CWT_MEDIA_TYPE)
    throw new Error(`typ ${String(header.get(TYP))} is not ${STATUS_LIST_CWT_MEDIA_TYPE}`);
  const payload = cborDecode(encodedPayload) as Map<number, unknown>;
  const list = payload.get(STATUS_LIST) as Map<string, unknown> | undefined;
  const sub = payload.get(SUB);
  const iat = payload.get(IAT);
  const exp = payload.get(EXP);
  if (typeof sub !== 'string' || typeof iat !== 'number') throw new Error('needs sub (2) and iat (6)');
  if (
    !(list instanceof Map) ||
    !(list.get('lst') instanceof Uint8Array) ||
    typeof list.get('bits') !== 'number'
  )
    throw new Error('status_list (65533) needs bits and lst');
  const toBeSigned = cborEncode(['Signature1', protectedHeader, new Uint8Array(), encodedPayload]);
  return {
    sub,
    iat,
    exp: typeof exp === 'number' ? exp : undefined,
    bits: list.get('bits') as number,
    lst: Buffer.from(list.get('lst') as Uint8Array).toString('base64url'),
    verify: (publicKey) =>
      verifySignature('sha256', toBeSigned, { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature),
  };
}
