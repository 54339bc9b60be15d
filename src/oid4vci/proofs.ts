import { decodeJwt, type Jwk } from '@openid4vc/oauth2';
import type { IssuerMetadataResult, Openid4vciIssuer } from '@openid4vc/openid4vci';
import { calculateJwkThumbprint, type JWK } from 'jose';
import {
  assertPublicKey,
  type HolderBindingJwk,
  HolderBindingJwkSchema,
} from '../formats/sd-jwt-vc/holder-binding-key.js';
import type { CredentialSchema } from '../schemas/schema-file.js';
import { iatIsFresh, PROOF_IAT_WINDOW_SECONDS } from './dpop.js';
import { fromLibrary, invalidCredentialRequest, invalidNonce, invalidProof } from './errors.js';
import type { KeyAttestationRequirement } from './key-attestation.js';
import type { ChannelParts } from './parts.js';

/** The proofs of a parsed credential request (OpenID4VCI 1.0 §8.2), by proof type. */
type Proofs = { jwt?: string[] | undefined; attestation?: string[] | undefined } | undefined;

/**
 * The holders' keys from the request's proofs (OpenID4VCI 1.0 §8.2), one credential each: `jwt`
 * proofs (`proofs.jwt`), up to `batchSize` of them (batch issuance), all with the same nonce, taken
 * once, and no key twice; or, where the schema's configuration takes it, one key attestation as
 * the proof (`proofs.attestation`, OpenID4VCI 1.0 Appendix F.3), whose first attested key is bound.
 * Any refusal refuses them all.
 */
export async function holderKeysOf(
  parts: ChannelParts,
  proofs: Proofs,
  metadata: IssuerMetadataResult,
  schema: CredentialSchema,
  batchSize: number,
): Promise<HolderBindingJwk[]> {
  const jwts = proofs?.jwt ?? [];
  const attestations = proofs?.attestation ?? [];
  const attestationTaken = parts.keyAttestation.offersAttestationProof(schema);
  if (jwts.length > 0 && attestations.length > 0)
    throw invalidCredentialRequest('proofs must hold one proof type');
  if (jwts.length > batchSize)
    throw invalidCredentialRequest(
      `proofs.jwt holds ${jwts.length} proofs; batch_credential_issuance.batch_size is ${batchSize}`,
    );
  if ((jwts.length === 0 && attestations.length !== 1) || (attestations.length > 0 && !attestationTaken))
    throw invalidProof(
      attestationTaken
        ? 'proofs.jwt, or exactly one proofs.attestation, is required'
        : 'proofs.jwt is required',
    );
  if (attestations.length === 1) {
    const taken = await takeNonce(parts, nonceOf(attestations[0]!));
    return [await verifyAttestationProof(parts, attestations[0]!, metadata, schema.keyAttestation, taken)];
  }
  const nonces = jwts.map(nonceOf);
  if (nonces.some((n) => n !== nonces[0])) throw invalidProof('every proof must carry the same c_nonce');
  const taken = await takeNonce(parts, nonces[0]);
  const keys: HolderBindingJwk[] = [];
  const thumbprints = new Set<string>();
  for (const jwt of jwts) {
    const key = await verifyProof(parts, jwt, metadata, schema.keyAttestation, taken);
    const thumbprint = await calculateJwkThumbprint(key as JWK);
    if (thumbprints.has(thumbprint)) throw invalidProof('two proofs are signed with the same key');
    thumbprints.add(thumbprint);
    keys.push(key);
  }
  return keys;
}

/** The nonce a proof carries (a proof that is no JWT is `invalid_proof`). */
function nonceOf(jwt: string): unknown {
  try {
    return decodeJwt({ jwt }).payload.nonce;
  } catch {
    throw invalidProof('the proof is not a JWT');
  }
}

interface TakenNonce {
  nonce: string;
  expiresAt: Date;
}

/** Takes the proofs' nonce once: unknown, used or expired is `invalid_nonce`. */
async function takeNonce(parts: ChannelParts, nonce: unknown): Promise<TakenNonce> {
  const expiresAt = typeof nonce === 'string' ? await parts.deps.store.takeNonce(nonce) : undefined;
  if (!expiresAt || expiresAt <= parts.now())
    throw invalidNonce('the proof needs a fresh c_nonce from the nonce endpoint');
  return { nonce: nonce as string, expiresAt };
}

/**
 * The proof of possession (OpenID4VCI 1.0 §8.2.1.1), its nonce taken: typ, aud, signature by the
 * library; its key a public EC or
 * OKP key by the same rules as the hosted channel's `signingKey`. With a `key_attestation` header
 * (required when the schema asks for one), the attestation is checked (key-attestation.ts) and
 * the proof's key must be one it attests.
 */
async function verifyProof(
  parts: ChannelParts,
  jwt: string,
  metadata: IssuerMetadataResult,
  required: KeyAttestationRequirement | undefined,
  taken: TakenNonce,
): Promise<HolderBindingJwk> {
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
      jwt,
      ...checkedAgainst(parts, metadata, taken),
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
  taken: TakenNonce,
): Promise<HolderBindingJwk> {
  const issuer = parts.keyAttestation.issuer();
  parts.keyAttestation.precheck(jwt);
  let verified: Awaited<ReturnType<Openid4vciIssuer['verifyCredentialRequestAttestationProof']>>;
  try {
    verified = await issuer.verifyCredentialRequestAttestationProof({
      keyAttestationJwt: jwt,
      ...checkedAgainst(parts, metadata, taken),
    });
  } catch (err) {
    throw fromLibrary(err, 'invalid attestation proof');
  }
  parts.keyAttestation.accept(verified.payload, required);
  const first = verified.payload.attested_keys[0];
  if (!first) throw invalidProof('the key attestation attests no key');
  return publicHolderKey(first, 'attested key', 'attested_keys[0]');
}

/** What the library checks a proof against: this issuer's metadata and the nonce taken, now. */
function checkedAgainst(parts: ChannelParts, metadata: IssuerMetadataResult, taken: TakenNonce) {
  return {
    issuerMetadata: metadata,
    expectedNonce: taken.nonce,
    nonceExpiresAt: taken.expiresAt,
    now: parts.now(),
  };
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
