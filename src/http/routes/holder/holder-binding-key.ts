import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { z } from 'zod';
import { invalidParameter } from '../../../errors.js';

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

/** The point must be on the curve (zod checked the shape; the crypto library checks the point). */
export function assertPublicKey(jwk: HolderBindingJwk, field: string): HolderBindingJwk {
  try {
    createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    throw invalidParameter(field, 'not a valid public key (the point is not on the curve)');
  }
  return jwk;
}
