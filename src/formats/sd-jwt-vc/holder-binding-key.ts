import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519';
import { p256, p384, p521 } from '@noble/curves/nist';
import { z } from 'zod';
import { invalidParameter } from '../../errors.js';

/**
 * A holder binding key (`signingKey.jwk`, put into `cnf.jwk`; SD-JWT VC §3.2.2.2, RFC 7800): what
 * a wallet proves possession of with a Key Binding JWT. HAIP requires ES256 (P-256); wallets also
 * use P-384, P-521 and Ed25519, so those are accepted. RSA (no wallet binding profile uses it,
 * and its JWK carries private CRT members that were once copied through) and secp256k1 (not a
 * JOSE curve in HAIP, not in WebCrypto) are refused. Only the public members are kept: `kty`,
 * `crv`, `x` (and `y` for EC); `kid`, `alg`, `jku`, `x5u`, `use` and anything else is dropped.
 */
const COORDINATE_BYTES = { 'P-256': 32, 'P-384': 48, 'P-521': 66, Ed25519: 32 } as const;

const coordinate = z.string().regex(/^[A-Za-z0-9_-]+$/, 'must be base64url');
// A private member present at all is refused (rather than silently dropped): the caller sent a secret.
const noPrivate = z.never({ error: 'a holder binding key is public: no private members' }).optional();

export const HolderBindingJwkSchema = z
  .object({
    kty: z.enum(['EC', 'OKP'], { error: 'must be EC (P-256, P-384, P-521) or OKP (Ed25519)' }),
    crv: z.string(),
    x: coordinate,
    y: coordinate.optional(),
    d: noPrivate,
  })
  .check((ctx) => {
    const { kty, crv, x, y } = ctx.value;
    const curves = kty === 'EC' ? ['P-256', 'P-384', 'P-521'] : ['Ed25519'];
    const issue = (path: string, message: string) =>
      ctx.issues.push({ code: 'custom', path: [path], message, input: ctx.value });
    if (!curves.includes(crv)) {
      issue('crv', `must be one of ${curves.join(', ')} for kty ${kty}`);
      return;
    }
    const length = Math.ceil((COORDINATE_BYTES[crv as keyof typeof COORDINATE_BYTES] * 4) / 3);
    if (x.length !== length) issue('x', `must be ${length} base64url characters for ${crv}`);
    if (kty === 'EC' && y?.length !== length) issue('y', `must be ${length} base64url characters for ${crv}`);
    if (kty === 'OKP' && y !== undefined) issue('y', 'is not a member of an OKP key');
  })
  .transform(({ kty, crv, x, y }) => (kty === 'EC' ? { kty, crv, x, y: y! } : { kty, crv, x }));
export type HolderBindingJwk = z.infer<typeof HolderBindingJwkSchema>;

/** did:jwk (W3C CCG did:jwk method): the holder, as its binding key names it. */
export const didJwk = (jwk: HolderBindingJwk): string =>
  `did:jwk:${Buffer.from(JSON.stringify(jwk)).toString('base64url')}`;

const WEIERSTRASS = { 'P-256': p256, 'P-384': p384, 'P-521': p521 } as const;

/**
 * The point must be a canonical encoding of a point of the curve's prime-order group (zod checked
 * the shape). node:crypto accepts an Ed25519 `x` of 32 zero bytes (a small-order point, which
 * any signature "verifies" against), so every curve is also decoded strictly with @noble/curves:
 * - each coordinate's base64url is the canonical one for its bytes (RFC 7515 §2: no stray bits);
 * - Ed25519 (RFC 8032 §5.1.3): y below p, not one of the eight small-order points;
 * - P-256/384/521 (SEC 1 §3.2.2.1): coordinates below p and on the curve (cofactor 1: no small
 *   subgroup beyond the point at infinity, which a JWK cannot encode).
 */
export function assertPublicKey(jwk: HolderBindingJwk, field: string): HolderBindingJwk {
  const bad = (why: string) => invalidParameter(field, `not a valid public key (${why})`);
  const x = canonicalCoordinate(jwk.x);
  if (!x) throw bad('x is not the canonical base64url of its bytes');
  if (jwk.kty === 'OKP') {
    let point: ReturnType<typeof ed25519.ExtendedPoint.fromHex>;
    try {
      point = ed25519.ExtendedPoint.fromHex(x, false);
    } catch {
      throw bad('not a canonical Ed25519 point encoding');
    }
    // Mixed-order points (a real key plus a torsion part) are not refused: only the owner of the
    // prime-order part can sign for them, and the subgroup check is a scalar multiplication
    // (~2.5 ms of CPU here) on every hosted issuance with an Ed25519 key.
    if (point.isSmallOrder()) throw bad('a small-order Ed25519 point');
  } else {
    const y = canonicalCoordinate(jwk.y);
    if (!y) throw bad('y is not the canonical base64url of its bytes');
    const curve = WEIERSTRASS[jwk.crv as keyof typeof WEIERSTRASS];
    try {
      curve.ProjectivePoint.fromAffine({ x: bigint(x), y: bigint(y) }).assertValidity();
    } catch {
      throw bad('the point is not on the curve');
    }
  }
  try {
    createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    throw bad('the point is not on the curve');
  }
  return jwk;
}

function canonicalCoordinate(value: string | undefined): Buffer | undefined {
  if (value === undefined) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  return bytes.toString('base64url') === value ? bytes : undefined;
}

const bigint = (bytes: Buffer): bigint => BigInt(`0x${bytes.toString('hex') || '0'}`);
