import type { ProofType } from '../schemas/schema-file.js';

/**
 * Storage interfaces (DESIGN §9). Async so that a networked engine (PostgreSQL) can implement
 * them; `sqlite/` is the embedded default. A new engine is one folder implementing `Store`.
 */

/** The body of `POST {v1}/dstorage/vcs` (spec 2.7): ciphertext and metadata only. */
export interface UploadEnvelope {
  holderDid: string;
  schemaId: string;
  expiresAt: string;
  data: string;
  iv: string;
  authTag: string;
  encryptedKey: string;
  externalId: string;
}

export type Channel = 'hosted' | 'direct';
export type UploadState = 'pending' | 'uploaded';
/** Token status list values (draft-ietf-oauth-status-list §7.1). */
export type CredentialStatus = 0 | 1 | 2;

export interface StatusSlot {
  partition: number;
  index: number;
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
  subjectHash: string;
  kid: string;
  createdAt: Date;
  expiresAt: Date;
  envelope: UploadEnvelope;
  /**
   * When the background worker may first take the upload (default: at once). The request that
   * records an issuance uploads it itself first, so it leaves the worker out until then.
   */
  uploadDueAt?: Date | undefined;
}

export interface IssuanceRecord extends NewIssuance {
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
  /** The same credential id recorded before, or a live (not revoked, not expired) hosted issuance with the same holder, schema, proof type and claims. */
  | { kind: 'duplicate'; record: IssuanceRecord }
  /** The proposed status slot or partition was taken meanwhile: propose again and re-sign. */
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
  /** One transaction: duplicate check, slot check, insert (DESIGN §9). */
  insertIssuance(issuance: NewIssuance, options: { dedupe: boolean }): Promise<InsertOutcome>;
  get(credentialId: string): Promise<IssuanceRecord | undefined>;
  getByNonce(nonce: number): Promise<IssuanceRecord | undefined>;

  /** Latest expiry among credentials signed with `kid` (retired keys stay published until then). */
  latestExpiryForKid(kid: string): Promise<Date | undefined>;

  /** Outbox: takes a lease on up to `limit` due uploads. */
  leaseDueUploads(now: Date, leaseMs: number, limit: number): Promise<IssuanceRecord[]>;
  /** Outbox: takes the lease on one pending upload; false when another worker holds it or it is done. */
  leaseUpload(credentialId: string, now: Date, leaseMs: number): Promise<boolean>;
  markUploaded(credentialId: string, storagePath: string | null, at: Date): Promise<void>;
  markUploadFailed(credentialId: string, error: string, nextAttemptAt: Date): Promise<void>;
  /** Start-up: every pending upload becomes due now, whatever its backoff said, and stale leases drop. */
  makePendingDue(now: Date): Promise<void>;
  /** Earliest next attempt among pending uploads. */
  nextUploadDue(): Promise<Date | undefined>;
  countPendingUploads(): Promise<number>;
}

export interface PartitionRecord {
  partition: number;
  size: number;
  bits: 1 | 2;
  allocated: number;
  publishedAt: Date | null;
  token: string | null;
  etag: string | null;
}

export type StatusChange = 'revoke' | 'suspend' | 'unsuspend';

/** What a partition's token is built from, read at one instant. */
export interface PartitionSnapshot {
  record: PartitionRecord;
  /** Indexes with a non-zero status. */
  statuses: Array<{ index: number; status: CredentialStatus }>;
  /** Voided by any later status change in the partition (and by a newer snapshot of it). */
  ticket: string;
}

export interface StatusStore {
  getPartition(partition: number): Promise<PartitionRecord | undefined>;
  listPartitions(): Promise<PartitionRecord[]>;
  /** Reads a partition's statuses for a rebuild and drops its cached token; undefined if unknown. */
  snapshotPartition(partition: number): Promise<PartitionSnapshot | undefined>;
  /**
   * Caches the token built from a snapshot, unless a status change voided its ticket meanwhile
   * (a stale token must never be cached); returns whether it was cached.
   */
  savePartitionToken(
    partition: number,
    token: string,
    etag: string,
    publishedAt: Date,
    ticket: string,
  ): Promise<boolean>;
  /**
   * Applies a status change in one transaction with the partition's cache invalidation.
   * Returns the record after, or undefined for an unknown nonce.
   */
  changeStatus(nonce: number, change: StatusChange, at: Date): Promise<IssuanceRecord | undefined>;
  /**
   * The same, synchronously, for a caller that already holds a transaction on the same database
   * (the Iden3 revocation tree commits with it).
   */
  changeStatusSync(nonce: number, change: StatusChange, at: Date): IssuanceRecord | undefined;
}

export interface ClaimsRecord {
  userId: string;
  schemaId: string;
  claims: Record<string, unknown>;
  expiresAt: Date | null;
}

export interface ClaimsStore {
  getClaims(userId: string, schemaId: string): Promise<ClaimsRecord | undefined>;
  upsertClaims(records: ClaimsRecord[]): Promise<number>;
  countClaims(): Promise<number>;
}

/** What admin tooling may see of an issuance: metadata only, never claims or the envelope. */
export type IssuanceSummary = Pick<
  IssuanceRecord,
  | 'credentialId'
  | 'holderDid'
  | 'schemaId'
  | 'proofType'
  | 'revocationNonce'
  | 'statusSlot'
  | 'kid'
  | 'createdAt'
  | 'expiresAt'
  | 'status'
  | 'revokedAt'
  | 'uploadState'
  | 'storagePath'
>;

/** Admin history filter on the derived status (revoked wins over expired, expired over suspended). */
export type HistoryStatusFilter = 'valid' | 'revoked' | 'suspended' | 'expired' | 'upload_pending';

export interface HistoryQuery {
  page: number;
  limit: number;
  order: 'createdAt_desc' | 'createdAt_asc';
  holderDid?: string | undefined;
  schemaId?: string | undefined;
  revocationNonce?: number | undefined;
  proofType?: ProofType | undefined;
  status?: HistoryStatusFilter | undefined;
  now: Date;
}

export interface IssuanceHistoryStore {
  list(q: HistoryQuery): Promise<{ records: IssuanceSummary[]; total: number }>;
  /** The holder's credentials of a schema that are neither revoked nor expired (valid or suspended). */
  activeFor(holderDid: string, schemaId: string, now: Date): Promise<IssuanceSummary[]>;
}

export type IdempotencyBegin =
  | { kind: 'started' }
  | { kind: 'replay'; status: number; body: unknown }
  /** The key was used with another request body. */
  | { kind: 'mismatch' }
  | { kind: 'in-progress' };

/** Idempotency-Key bookkeeping for admin routes: one row per (scope, key). */
export interface IdempotencyStore {
  /** Claims the key for a request, or says how it was used. An unfinished claim older than `staleMs` is taken over. */
  begin(
    scope: string,
    key: string,
    requestHash: string,
    now: Date,
    staleMs: number,
  ): Promise<IdempotencyBegin>;
  /** Stores the answer to replay. */
  complete(scope: string, key: string, status: number, body: unknown): Promise<void>;
  /** Forgets an unfinished claim (the request failed; a retry runs it again). */
  release(scope: string, key: string): Promise<void>;
  /** Drops keys created before `before`. */
  prune(before: Date): Promise<number>;
}

export interface Store {
  issuances: IssuanceStore;
  status: StatusStore;
  claims: ClaimsStore;
  history: IssuanceHistoryStore;
  idempotency: IdempotencyStore;
  close(): Promise<void>;
}
