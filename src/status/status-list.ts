import { deflateSync, inflateSync } from 'node:zlib';
import type { Sign } from '../keys/key-backend.js';
import { signJwt } from '../keys/sign-jwt.js';

// Section numbers refer to draft-ietf-oauth-status-list-17 (Token Status List).

/** Bits per status; draft-ietf-oauth-status-list §4.1 step 1 allows only these. */
export type StatusBits = 1 | 2 | 4 | 8;

/** Registered Status Type values (draft-ietf-oauth-status-list §7.1). */
export const StatusValue = { VALID: 0, INVALID: 1, SUSPENDED: 2 } as const;

/** `typ` of a Status List Token JWT (draft-ietf-oauth-status-list §5.1); media type `application/statuslist+jwt` (§8.2). */
export const STATUS_LIST_JWT_TYP = 'statuslist+jwt';

// A decoded list never grows beyond this unless the caller names the size: 16 MiB is 128 million
// 1-bit statuses, far above any partition we publish, and it stops a zlib bomb in a fetched token.
const MAX_DECODED_BYTES = 16 * 1024 * 1024;

const BASE64URL = /^[A-Za-z0-9_-]*$/;

function assertBits(bits: number): asserts bits is StatusBits {
  if (bits !== 1 && bits !== 2 && bits !== 4 && bits !== 8) {
    throw new RangeError(`bits must be 1, 2, 4 or 8, got ${bits}`);
  }
}

/** A fixed-size list of `size` statuses of `bits` bits each, backed by one Uint8Array. */
export class StatusList {
  readonly size: number;
  readonly bits: StatusBits;
  readonly bytes: Uint8Array;
  readonly #mask: number;

  /**
   * @param size number of statuses; `size * bits` must be a whole number of bytes.
   * @param bytes an existing byte array to wrap (not copied); its length must be `size * bits / 8`.
   */
  constructor(size: number, bits: StatusBits, bytes?: Uint8Array) {
    assertBits(bits);
    // draft-ietf-oauth-status-list §13.4: the size in bits should be divisible into whole bytes.
    // (A multiple of 8 statuses always is; the draft's own 2-bit example has 12.)
    if (!Number.isSafeInteger(size) || size <= 0 || (size * bits) % 8 !== 0) {
      throw new RangeError(`size must be a positive integer with size * bits a multiple of 8, got ${size}`);
    }
    const byteLength = (size * bits) / 8;
    if (bytes !== undefined && bytes.length !== byteLength) {
      throw new RangeError(
        `a list of ${size} ${bits}-bit statuses needs ${byteLength} bytes, got ${bytes.length}`,
      );
    }
    this.size = size;
    this.bits = bits;
    this.bytes = bytes ?? new Uint8Array(byteLength);
    this.#mask = (1 << bits) - 1;
  }

  get(index: number): number {
    this.#checkIndex(index);
    // draft-ietf-oauth-status-list §4.1 step 3: statuses fill each byte from the least significant bit.
    const bit = index * this.bits;
    return (this.bytes[bit >>> 3]! >>> (bit & 7)) & this.#mask;
  }

  set(index: number, value: number): void {
    this.#checkIndex(index);
    // The library only rejects values above 2^bits, so 2 in a 1-bit list silently sets a neighbour.
    if (!Number.isInteger(value) || value < 0 || value > this.#mask) {
      throw new RangeError(`status value must be an integer in [0, ${this.#mask}], got ${value}`);
    }
    const bit = index * this.bits;
    const byte = bit >>> 3;
    const shift = bit & 7;
    this.bytes[byte] = (this.bytes[byte]! & ~(this.#mask << shift)) | (value << shift);
  }

  /** DEFLATE (zlib format, level 9) + base64url: the `lst` claim. */
  encode(): string {
    // draft-ietf-oauth-status-list §4.1 step 4 (ZLIB, highest level) and §4.2 (base64url, no padding).
    return deflateSync(this.bytes, { level: 9 }).toString('base64url');
  }

  /**
   * Decodes an `lst` claim. With `size`, the decompressed array must hold exactly that many
   * statuses; without it, the size is what the array holds (whole bytes).
   */
  static decode(lst: string, bits: StatusBits, size?: number): StatusList {
    assertBits(bits);
    // Buffer's base64url decoder skips characters it does not know, so check the alphabet first.
    if (!BASE64URL.test(lst) || lst.length % 4 === 1 || lst.length === 0) {
      throw new TypeError('lst is not base64url without padding');
    }
    const expected = size === undefined ? undefined : (size * bits) / 8;
    if (expected !== undefined && (!Number.isSafeInteger(expected) || expected <= 0)) {
      throw new RangeError(`size must be a positive integer with size * bits a multiple of 8, got ${size}`);
    }
    const inflated = inflateSync(Buffer.from(lst, 'base64url'), {
      maxOutputLength: expected ?? MAX_DECODED_BYTES,
    });
    if (expected !== undefined && inflated.length !== expected) {
      throw new RangeError(`lst holds ${inflated.length} bytes, expected ${expected}`);
    }
    const bytes = new Uint8Array(inflated.buffer, inflated.byteOffset, inflated.length);
    return new StatusList(size ?? (bytes.length * 8) / bits, bits, bytes);
  }

  #checkIndex(index: number): void {
    if (!Number.isInteger(index) || index < 0 || index >= this.size) {
      throw new RangeError(`status index must be an integer in [0, ${this.size}), got ${index}`);
    }
  }
}

/** Claims of a Status List Token; `bits` and `lst` become the `status_list` claim. */
export interface StatusListTokenClaims {
  /** Only where the identification mode needs it (a DID that resolves the `kid`). */
  iss?: string;
  sub: string;
  iat: number;
  exp: number;
  ttl: number;
  bits: StatusBits;
  lst: string;
}

/** Signs a Status List Token (JWT) with the ES256 key's signer (its backend: software or a token). */
export async function signStatusListToken(
  claims: StatusListTokenClaims,
  key: { sign: Sign; kid: string; x5c?: string[] },
): Promise<string> {
  const { iss, sub, iat, exp, ttl, bits, lst } = claims;
  assertBits(bits);
  // draft-ietf-oauth-status-list §5.1: ttl MUST be a positive number; exp after iat or it is born expired.
  if (!Number.isSafeInteger(iat) || !Number.isSafeInteger(exp) || exp <= iat) {
    throw new RangeError(`exp must be an integer after iat, got iat ${iat}, exp ${exp}`);
  }
  if (!Number.isSafeInteger(ttl) || ttl <= 0) {
    throw new RangeError(`ttl must be a positive integer, got ${ttl}`);
  }
  // draft-ietf-oauth-status-list §5.1: header typ statuslist+jwt; claims sub, iat, exp, ttl,
  // status_list, and the optional iss.
  return signJwt(
    { alg: 'ES256', typ: STATUS_LIST_JWT_TYP, kid: key.kid, ...(key.x5c ? { x5c: key.x5c } : {}) },
    { ...(iss ? { iss } : {}), sub, iat, exp, ttl, status_list: { bits, lst } },
    key.sign,
  );
}
