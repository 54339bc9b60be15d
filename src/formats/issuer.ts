import type { JWK } from 'jose';
import type { ProofType } from '../model.js';
import type { CredentialSchema } from '../schemas/schema-file.js';

/** A token status list entry (draft-ietf-oauth-status-list §6.1): `status.status_list`. */
export interface StatusListEntry {
  idx: number;
  uri: string;
}

/**
 * Everything a back-end needs to sign one credential. Claims are already validated. What only one
 * format reads travels in `options`, that format's own object (e.g. `SdJwtVcIssueOptions`).
 */
export interface IssueInput {
  /** Credential id and upload `externalId`: a UUID. Written as `urn:uuid:<id>`. */
  credentialId: string;
  holderDid: string;
  schema: CredentialSchema;
  /** The holder's claims (credentialSubject without `id`), validated against the schema. */
  claims: Record<string, unknown>;
  issuedAt: Date;
  expiresAt: Date;
  /** Non-negative integer below 2^53 (docs/schemas-and-claims.md). */
  revocationNonce: number;
  /** The token status list slot, for a format whose `usesStatusList`. */
  status?: StatusListEntry | undefined;
  /** The holder's key the credential binds (SD-JWT VC `cnf`), when the request gave one. */
  holderJwk?: JWK | undefined;
  /** The format's own issue options (direct issuance's overrides), checked by that format. */
  options?: unknown;
}

export interface IssuedCredential {
  /** The envelope plaintext: the compact SD-JWT string, or the W3C credential object. */
  credential: string | Record<string, unknown>;
  /** Key id the credential was signed with (recorded with the issuance; rotation, history). */
  kid: string;
}

/**
 * A signing back-end (docs/architecture.md). Route code picks one by `proofType` and never sees
 * format details.
 */
export interface Issuer {
  readonly proofType: ProofType;
  /** Whether this back-end can issue for the schema (e.g. Iden3 needs the `iden3` block). */
  supports(schema: CredentialSchema): boolean;
  /** Whether credentials of this back-end carry a token status list entry. */
  readonly usesStatusList: boolean;
  issue(input: IssueInput): Promise<IssuedCredential>;
}
