import { decodeJwt, type Jwk } from '@openid4vc/oauth2';
import type { IssuerMetadataResult, Openid4vciIssuer } from '@openid4vc/openid4vci';
import {
  assertPublicKey,
  type HolderBindingJwk,
  HolderBindingJwkSchema,
} from '../formats/sd-jwt-vc/holder-binding-key.js';
import { iatIsFresh, PROOF_IAT_WINDOW_SECONDS } from './dpop.js';
import { fromLibrary, invalidNonce, invalidProof } from './errors.js';
import type { ChannelParts } from './parts.js';

/**
 * The proof of possession (OpenID4VCI 1.0 §8.2.1.1): its nonce taken once (unknown, used or
 * expired: `invalid_nonce`), then typ, aud, signature by the library; its key a public EC or
 * OKP key by the same rules as the hosted channel's `signingKey`.
 */
export async function verifyProof(
  parts: ChannelParts,
  jwt: string,
  metadata: IssuerMetadataResult,
): Promise<HolderBindingJwk> {
  let nonce: unknown;
  try {
    nonce = decodeJwt({ jwt }).payload.nonce;
  } catch {
    throw invalidProof('the proof is not a JWT');
  }
  const expiresAt = typeof nonce === 'string' ? await parts.deps.store.takeNonce(nonce) : undefined;
  if (!expiresAt || expiresAt <= parts.now())
    throw invalidNonce('the proof needs a fresh c_nonce from the nonce endpoint');
  let verified: Awaited<ReturnType<Openid4vciIssuer['verifyCredentialRequestJwtProof']>>;
  try {
    verified = await parts.issuer.verifyCredentialRequestJwtProof({
      issuerMetadata: metadata,
      jwt,
      expectedNonce: nonce as string,
      nonceExpiresAt: expiresAt,
      now: parts.now(),
    });
  } catch (err) {
    throw fromLibrary(err, 'invalid proof');
  }
  if (!iatIsFresh(verified.payload.iat, parts.now()))
    throw invalidProof(`the proof's iat is more than ${PROOF_IAT_WINDOW_SECONDS} s from the server's time`);
  const jwk: Jwk | undefined = verified.header.jwk;
  if (!jwk || verified.signer.method !== 'jwk')
    throw invalidProof('the proof must carry its key as a jwk header');
  const shape = HolderBindingJwkSchema.safeParse(jwk);
  if (!shape.success)
    throw invalidProof(
      `the proof's jwk is not a public holder key (${shape.error.issues[0]?.message ?? 'invalid'})`,
    );
  try {
    return assertPublicKey(shape.data, 'proof.jwk');
  } catch (err) {
    throw invalidProof((err as Error).message);
  }
}
