import type {
  AuditActor,
  Channel,
  CredentialStatus,
  Envelope,
  ProofType,
  StatusSlot,
  UploadState,
} from '../model.js';
import type { NewWebhookEvent } from './webhook-store.js';

/**
 * The stored body of `POST {v1}/dstorage/vcs` (docs/interface.md): the sealed envelope plus the metadata the
 * hosting service files it under; never the plaintext.
 */
export interface UploadBody extends Envelope {
  holderDid: string;
  schemaId: string;
  expiresAt: string;
  externalId: string;
}

export interface NewIssuance {
  credentialId: string;
  channel: Channel;
  userId: string;
  holderDid: string;
  schemaId: string;
  proofType: ProofType;
  revocationNonce: number;
  statusSlot: StatusSlot | null;
  /**
   * Hash of the claims and the holder's keys (`cnf` and the encryption key;
   * src/issuance/issuance-core.ts `issuanceSubjectHash`): with the holder DID, schema and proof
   * type, what makes a hosted repeat the same issuance.
   */
  subjectHash: string;
  kid: string;
  createdAt: Date;
  expiresAt: Date;
  /**
   * What the outbox uploads; null for an oid4vci credential, which goes to the wallet in the
   * credential response (recorded with upload_state `none`, never pending).
   */
  envelope: UploadBody | null;
  /**
   * When the background worker may first take the upload (default: at once). The request that
   * records an issuance uploads it itself first, so it leaves the worker out until then: the
   * insert also holds the upload's lease until then (no separate lease write; see `leaseUpload`).
   */
  uploadDueAt?: Date | undefined;
  /**
   * A direct issuance's keyed hash of its recipient's normalised email (src/issuance/email-hash.ts),
   * the admin history's `email` filter; never the address. Written only, never read back.
   */
  emailHash?: string | undefined;
  /** The batch-issue run it belongs to (a bulk status change's `batchId` selector); read by `history.batchOf`. */
  batchId?: string | undefined;
  /** The credential this one renews. Written only. */
  renewedFrom?: string | undefined;
  /** Its `credential.issued` webhook event, written with it while an endpoint exists. */
  event?: NewWebhookEvent | undefined;
}

export interface IssuanceRecord
  extends Omit<NewIssuance, 'emailHash' | 'event' | 'envelope' | 'batchId' | 'renewedFrom'> {
  /**
   * The envelope to upload, kept until the hosting service has stored it (docs/architecture.md
   * "Envelopes until delivered"): set while the upload is pending or failed, null once uploaded,
   * and null for an oid4vci credential (nothing to upload).
   */
  envelope: UploadBody | null;
  /**
   * SHA-256 (hex) of the envelope's ciphertext (the decoded `data`), recorded with the issuance and
   * kept for good: what the hosting service's copy is matched against once the envelope is gone.
   * Null for an oid4vci credential, and for a record made before the envelopes had a table of
   * their own (its digest, if any, is in the retired `envelope` column).
   */
  envelopeSha256: string | null;
  status: CredentialStatus;
  revokedAt: Date | null;
  suspendedAt: Date | null;
  uploadState: UploadState;
  uploadAttempts: number;
  nextAttemptAt: Date | null;
  lastError: string | null;
  storagePath: string | null;
  uploadedAt: Date | null;
}

export type InsertOutcome =
  | { kind: 'inserted'; record: IssuanceRecord }
  /** The same credential id recorded before, or a live (not revoked, not expired) hosted issuance with the same holder, schema, proof type and subject hash. */
  | { kind: 'duplicate'; record: IssuanceRecord }
  /** The proposed status slot or partition was taken meanwhile: propose again and re-sign. */
  | { kind: 'slot-taken' }
  | { kind: 'nonce-taken' };

/** What `insertIssuances` did with a batch: every issuance recorded, or none of them. */
export type BatchInsertOutcome =
  | { kind: 'inserted'; records: IssuanceRecord[] }
  /** One of its credential ids was recorded before (the batch was issued already): nothing written. */
  | { kind: 'duplicate' }
  /** A proposed slot or nonce was taken meanwhile: nothing written; propose again and re-sign. */
  | { kind: 'slot-taken' }
  | { kind: 'nonce-taken' };

export interface IssuanceStore {
  /** A random free slot of the open partition (opening the next one when full). Not reserved. */
  proposeStatusSlot(partitionSize: number, bits: 1 | 2): Promise<StatusSlot>;
  /** Whether a revocation nonce is already used. */
  nonceInUse(nonce: number): Promise<boolean>;
  findLiveDuplicate(q: {
    holderDid: string;
    schemaId: string;
    proofType: ProofType;
    subjectHash: string;
    now: Date;
  }): Promise<IssuanceRecord | undefined>;
  /**
   * One transaction: duplicate check, slot check, insert (with its envelope, kept until
   * `markUploaded`). With `audit`, an `issue` audit row (target: the credential id) commits with it.
   */
  insertIssuance(
    issuance: NewIssuance,
    options: { dedupe: boolean; audit?: AuditActor | undefined },
  ): Promise<InsertOutcome>;
  /**
   * One transaction for a whole batch (OpenID4VCI batch issuance): each issuance as
   * `insertIssuance` writes it without dedupe (its envelope, slot, audit row and event), and
   * all of them commit or none does.
   */
  insertIssuances(
    batch: readonly NewIssuance[],
    options: { audit?: AuditActor | undefined },
  ): Promise<BatchInsertOutcome>;
  get(credentialId: string): Promise<IssuanceRecord | undefined>;
  getByNonce(nonce: number): Promise<IssuanceRecord | undefined>;

  /** Latest expiry among credentials signed with `kid` (retired keys stay published until then). */
  latestExpiryForKid(kid: string): Promise<Date | undefined>;

  /** Outbox: takes a lease on up to `limit` due uploads. */
  leaseDueUploads(now: Date, leaseMs: number, limit: number): Promise<IssuanceRecord[]>;
  /** Outbox: takes the lease on one pending upload; false when another worker holds it or it is done. */
  leaseUpload(credentialId: string, now: Date, leaseMs: number): Promise<boolean>;
  /**
   * The hosting service stored it: uploaded, and its envelope deleted in the same transaction (the
   * record keeps `envelopeSha256`). A failed upload's envelope is kept until then.
   */
  markUploaded(credentialId: string, storagePath: string | null, at: Date): Promise<void>;
  /**
   * Records a failed attempt. When it is the `giveUpAfter`-th attempt, the upload becomes `failed`
   * (no further attempts until `retryFailedUploads`); else it stays pending until `nextAttemptAt`.
   */
  markUploadFailed(
    credentialId: string,
    error: string,
    nextAttemptAt: Date,
    giveUpAfter: number,
  ): Promise<{ attempts: number; gaveUp: boolean }>;
  /**
   * Puts `failed` uploads (the given ones, or all) back to pending, due at `now`, attempts from 0.
   * Returns the credential ids resumed.
   */
  retryFailedUploads(credentialIds: string[] | 'all', now: Date): Promise<string[]>;
  /**
   * Outbox sweep: gives a due time to pending uploads the outbox's reads do not reach, and returns
   * how many. On PostgreSQL those are uploads a version from before its migration 023 queued
   * again (docs/architecture.md "The outbox on PostgreSQL"), looked for a bounded page per call;
   * SQLite's outbox reads the issuances themselves, so there are none.
   */
  repairUnseenUploads(now: Date): Promise<number>;
  /** Start-up: every pending upload becomes due now, whatever its backoff said, and stale leases drop. */
  makePendingDue(now: Date): Promise<void>;
  /** Earliest next attempt among pending uploads. */
  nextUploadDue(): Promise<Date | undefined>;
  countPendingUploads(): Promise<number>;
  /** When the oldest upload still pending was issued (`doctor`, readiness and the metrics). */
  oldestPendingUpload(): Promise<Date | undefined>;
  /** Uploads the outbox gave up on (`doctor`, readiness and the metrics). */
  countFailedUploads(): Promise<number>;
}
