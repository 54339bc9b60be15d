import { Jwt } from '@sd-jwt/core';
import type { Sign } from './key-backend.js';

/**
 * A compact JWS (RFC 7515 §7.1) of `header` and `payload` signed by a key's backend: the JWT
 * encoding is @sd-jwt/core's `Jwt`, which takes a signer function, so the signature can be made
 * wherever the key lives (node:crypto, or a PKCS#11 token) rather than by a library holding the key.
 */
export async function signJwt(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  sign: Sign,
): Promise<string> {
  return new Jwt({ header, payload }).sign(async (data: string) =>
    (await sign(Buffer.from(data))).toString('base64url'),
  );
}
