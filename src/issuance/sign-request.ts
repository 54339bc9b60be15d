import type { JWK } from 'jose';
import type { HolderPublicKey } from '../envelope/index.js';
import type { Issuer } from '../formats/issuer.js';
import type { AuditActor, ProofType } from '../model.js';
import type { LoadedSchema } from '../schemas/schema-registry.js';
import type { Channel, IssuanceRecord } from '../store/store.js';

/** What any issuance (hosted or direct) hands to `signAndRecord`. */
export interface SignRequest {
  /** From `requireIssuer`, which the flow calls once, before any lookup. */
  issuer: Issuer;
  /** A caller-chosen credential id (derived from an Idempotency-Key); random by default. */
  credentialId?: string | undefined;
  channel: Channel;
  userId: string;
  holderDid: string;
  schema: LoadedSchema;
  proofType: ProofType;
  claims: Record<string, unknown>;
  /**
   * The caller checked `claims` against `schema` in this request (`SchemaRegistry.assertClaims`)
   * and answers a misfit in its own words: the core does not check them again.
   */
  claimsChecked?: true | undefined;
  expiresAt: Date;
  /**
   * The holder's key the credential is sealed to for the upload. Absent (the oid4vci channel):
   * nothing is sealed or uploaded; the credential goes back to the caller (`signForResponse`).
   */
  encryptTo?: HolderPublicKey | undefined;
  holderJwk?: JWK | undefined;
  /** The format's own issue options (`IssueInput.options`; SD-JWT VC: direct issuance's vct and frame). */
  options?: unknown;
  dedupe: boolean;
  /** A direct issuance's keyed recipient-email hash (store.ts NewIssuance.emailHash). */
  emailHash?: string | undefined;
  /** The batch-issue run (store.ts NewIssuance.batchId). */
  batchId?: string | undefined;
  /** The credential this one renews (store.ts NewIssuance.renewedFrom). */
  renewedFrom?: string | undefined;
  /** An admin's issuance: recorded in the audit log with the credential. */
  audit?: AuditActor | undefined;
}

/** The phases `IssuanceCore.phaseTimer` reports, in order (claims and upload: hosted only). */
export type IssuancePhase = 'claims' | 'sign' | 'envelope' | 'record' | 'upload';

/** What `signForResponse` gives: the record, and the signed credential when this call signed it. */
export interface SignedForResponse {
  record: IssuanceRecord;
  /** Undefined when the credential id was recorded before (nothing was signed this time). */
  credential: string | Record<string, unknown> | undefined;
}
