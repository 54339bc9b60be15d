import { decodeJwt } from '@openid4vc/oauth2';
import type { Openid4vciIssuer } from '@openid4vc/openid4vci';
import type { Oid4vciProfile } from '../config/oid4vci-config.js';
import type { CredentialSchema } from '../schemas/schema-file.js';
import { invalidProof } from './errors.js';
import { librariesVerifying, type ProtocolLibraries, SIGNING_ALGS } from './library.js';
import type { X5cTrust } from './x5c-trust.js';

/**
 * Key attestations (OpenID4VCI 1.0 Appendix D): a key attester (the wallet's secure element or
 * its provider) vouches that the holder's keys (`attested_keys`) live in storage of a given
 * strength (`key_storage`) behind a given user authentication (`user_authentication`). One comes
 * in a `jwt` proof's `key_attestation` header, or is itself the proof (`attestation` proof type).
 * Its form, signature, `exp` and, in a `jwt` proof, that the proof's key is attested, are checked
 * by `@openid4vc/openid4vci`; the attester's chain (x5c to OID4VCI_KEY_ATTESTATION_TRUST), ES256
 * and the levels a schema accepts (its `keyAttestation` block) are checked here.
 */

/** A schema's `keyAttestation` block. */
export type KeyAttestationRequirement = NonNullable<CredentialSchema['keyAttestation']>;

/** What a verified key attestation asserts. */
interface AttestationPayload {
  key_storage?: string[] | undefined;
  user_authentication?: string[] | undefined;
}

export class KeyAttestationVerifier {
  /** The libraries whose JWT check trusts the key attesters' chains (and holders' own keys). */
  readonly libraries: ProtocolLibraries | undefined;

  constructor(
    private readonly trust: X5cTrust | undefined,
    private readonly profile: Oid4vciProfile,
    private readonly now: () => Date,
  ) {
    this.libraries = trust ? librariesVerifying(trust.verifyJwt(now)) : undefined;
  }

  /** Whether `attestation` proofs are taken for this schema (advertised in its configuration). */
  offersAttestationProof(schema: CredentialSchema): boolean {
    return schema.keyAttestation !== undefined || this.profile === 'haip';
  }

  /**
   * The configuration's `proof_types_supported` (OpenID4VCI 1.0 §12.2.4): `key_attestations_required`
   * on `jwt` when the schema requires one, and the `attestation` proof type where it is taken.
   */
  proofTypes(schema: CredentialSchema, jwt: Record<string, unknown>): Record<string, unknown> {
    const required = schema.keyAttestation;
    const keyAttestationsRequired = required
      ? {
          key_attestations_required: {
            ...(required.keyStorage ? { key_storage: required.keyStorage } : {}),
            ...(required.userAuthentication ? { user_authentication: required.userAuthentication } : {}),
          },
        }
      : {};
    return {
      jwt: { ...jwt, ...keyAttestationsRequired },
      ...(this.offersAttestationProof(schema)
        ? { attestation: { proof_signing_alg_values_supported: SIGNING_ALGS, ...keyAttestationsRequired } }
        : {}),
    };
  }

  /** The issuer library able to check key attestations; refuses when no key attester is trusted. */
  issuer(): Openid4vciIssuer {
    if (!this.libraries || !this.trust)
      throw invalidProof('this issuer trusts no key attester (OID4VCI_KEY_ATTESTATION_TRUST is unset)');
    return this.libraries.issuer;
  }

  /** Checks made before the library's: a JWT signed with ES256 by an attester of the trusted chains. */
  precheck(jwt: string): void {
    let header: Record<string, unknown>;
    try {
      header = decodeJwt({ jwt }).header;
    } catch {
      throw invalidProof('the key attestation is not a JWT');
    }
    if (!SIGNING_ALGS.includes(String(header.alg)))
      throw invalidProof(`the key attestation must be signed with ${SIGNING_ALGS.join(', ')}`);
    if (header.x5c === undefined)
      throw invalidProof("the key attestation must carry its attester's certificate chain (x5c)");
    const problem = this.trust?.problem(header.x5c, this.now());
    if (problem) throw invalidProof(`the key attestation is not from a trusted key attester: ${problem}`);
  }

  /** Checks a verified attestation against the levels the schema accepts. */
  accept(payload: AttestationPayload, required: KeyAttestationRequirement | undefined): void {
    const levels = [
      ['key_storage', payload.key_storage, required?.keyStorage],
      ['user_authentication', payload.user_authentication, required?.userAuthentication],
    ] as const;
    for (const [name, asserted, accepted] of levels) {
      if (accepted && !accepted.some((level) => asserted?.includes(level)))
        throw invalidProof(
          `the key attestation's ${name} (${(asserted ?? []).join(', ') || 'none'}) is none of the accepted ${accepted.join(', ')}`,
        );
    }
  }
}
