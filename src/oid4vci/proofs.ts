import { decodeJwt, type Jwk } from '@openid4vc/oauth2';
import type { IssuerMetadataResult, Openid4vciIssuer } from '@openid4vc/openid4vci';
import {
  assertPublicKey,
  type HolderBindingJwk,
  HolderBindingJwkSchema,
} from '../formats/sd-jwt-vc/holder-binding-key.js';
import type { CredentialSchema } from '../schemas/schema-file.js';
import { iatIsFresh, PROOF_IAT_WINDOW_SECONDS } from './dpop.js';
import { fromLibrary, invalidNonce, invalidProof } from './errors.js';
import type { KeyAttestationRequirement } from './key-attestation.js';
import type { ChannelParts } from './parts.js';

/** The proofs of a parsed credential request (OpenID4VCI 1.0 §8.2), by proof type. */
type Proofs = { jwt?: string[] | undefined; attestation?: string[] | undefined } | undefined;

/**
 * The holder's key from the request's one proof: a `jwt` proof (`proofs.jwt`), or, where the
 * schema's configuration takes it, a key attestation as the proof (`proofs.attestation`,
 * OpenID4VCI 1.0 Appendix F.3), whose first attested key is bound.
 */
export async function holderKeyOf(
  parts: ChannelParts,
  proofs: Proofs,
  metadata: IssuerMetadataResult,
  schema: CredentialSchema,
): Promise<HolderBindingJwk> {
  const jwts = proofs?.jwt ?? [];
  const attestations = proofs?.attestation ?? [];
  const attestationTaken = parts.keyAttestation.offersAttestationProof(schema);
  if (jwts.length + attestations.length !== 1 || (attestations.length > 0 && !attestationTaken))
    throw invalidProof(
      attestationTaken
        ? 'exactly one proof, in proofs.jwt or proofs.attestation, is required'
        : 'exactly one proofs.jwt is required',
    );
  return jwts.length === 1
    ? verifyProof(parts, jwts[0]!, metadata, schema.keyAttestation)
    : verifyAttestationProof(parts, attestations[0]!, metadata, schema.keyAttestation);
}

/** Takes the proof's nonce once: unknown, used or expired is `invalid_nonce`. */
async function takeNonce(parts: ChannelParts, jwt: string): Promise<{ nonce: string; expiresAt: Date }> {
  let nonce: unknown;
  try {
    nonce = decodeJwt({ jwt }).payload.nonce;
  } catch {
    throw invalidProof('the proof is not a JWT');
  }
  const expiresAt = typeof nonce === 'string' ? await parts.deps.store.takeNonce(nonce) : undefined;
  if (!expiresAt || expiresAt <= parts.now())
    throw invalidNonce('the proof needs a fresh c_nonce from the nonce endpoint');
  return { nonce: nonce as string, expiresAt };
}

/**
 * The proof of possession (OpenID4VCI 1.0 §8.2.1.1): its nonce taken once (unknown, used or
 * expired: `invalid_nonce`), then typ, aud, signature by the library; its key a public EC or
 * OKP key by the same rules as the hosted channel's `signingKey`. With a `key_attestation` header
 * (required when the schema asks for one), the attestation is checked (key-attestation.ts) and
 * the proof's key must be one it attests.
 */
async function verifyProof(
  parts: ChannelParts,
  jwt: string,
  metadata: IssuerMetadataResult,
  required: KeyAttestationRequirement | undefined,
): Promise<HolderBindingJwk> {
  const { nonce, expiresAt } = await takeNonce(parts, jwt);
  const keyAttestation = decodeJwt({ jwt }).header.key_attestation;
  if (required && typeof keyAttestation !== 'string')
    throw invalidProof("this credential requires a key attestation in the proof's key_attestation header");
  let issuer: Openid4vciIssuer = parts.issuer;
  if (typeof keyAttestation === 'string') {
    issuer = parts.keyAttestation.issuer();
    parts.keyAttestation.precheck(keyAttestation);
  }
  let verified: Awaited<ReturnType<Openid4vciIssuer['verifyCredentialRequestJwtProof']>>;
  try {
    verified = await issuer.verifyCredentialRequestJwtProof({
      issuerMetadata: metadata,
      jwt,
      expectedNonce: nonce,
      nonceExpiresAt: expiresAt,
      now: parts.now(),
    });
  } catch (err) {
    throw fromLibrary(err, 'invalid proof');
  }
  if (!iatIsFresh(verified.payload.iat, parts.now()))
    throw invalidProof(`the proof's iat is more than ${PROOF_IAT_WINDOW_SECONDS} s from the server's time`);
  if (verified.keyAttestation) parts.keyAttestation.accept(verified.keyAttestation.payload, required);
  const jwk: Jwk | undefined = verified.header.jwk;
  if (!jwk || verified.signer.method !== 'jwk')
    throw invalidProof('the proof must carry its key as a jwk header');
  return publicHolderKey(jwk, 'jwk', 'proof.jwk');
}

/**
 * A key attestation as the proof (OpenID4VCI 1.0 Appendix F.3): its `nonce` a fresh c_nonce,
 * its chain trusted, its levels accepted; the credential is bound to its first attested key.
 */
async function verifyAttestationProof(
  parts: ChannelParts,
  jwt: string,
  metadata: IssuerMetadataResult,
  required: KeyAttestationRequirement | undefined,
): Promise<HolderBindingJwk> {
  const { nonce, expiresAt } = await takeNonce(parts, jwt);
  const issuer = parts.keyAttestation.issuer();
  parts.keyAttestation.precheck(jwt);
  let verified: Awaited<ReturnType<Openid4vciIssuer['verifyCredentialRequestAttestationProof']>>;
  try {
    verified = await issuer.verifyCredentialRequestAttestationProof({
      issuerMetadata: metadata,
      keyAttestationJwt: jwt,
      expectedNonce: nonce,
      nonceExpiresAt: expiresAt,
      now: parts.now(),
    });
  } catch (err) {
    throw fromLibrary(err, 'invalid attestation proof');
  }
  parts.keyAttestation.accept(verified.payload, required);
  const first = verified.payload.attested_keys[0];
  if (!first) throw invalidProof('the key attestation attests no key');
  return publicHolderKey(first, 'attested key', 'attested_keys[0]');
}

function publicHolderKey(jwk: Jwk, what: string, path: string): HolderBindingJwk {
  const shape = HolderBindingJwkSchema.safeParse(jwk);
  if (!shape.success)
    throw invalidProof(
      `the proof's ${what} is not a public holder key (${shape.error.issues[0]?.message ?? 'invalid'})`,
    );
  try {
    return assertPublicKey(shape.data, path);
  } catch (err) {
    throw invalidProof((err as Error).message);
  }
}
