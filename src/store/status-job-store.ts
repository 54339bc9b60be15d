import type { AuditActor, CredentialStatus, StatusChange } from '../model.js';

/**
 * Bulk status changes (docs/operations.md "Bulk status changes"): a job takes its selection when it
 * is created, then is worked through in credential id order, one chunk per transaction, under a
 * lease that any instance may take over once it has expired. Each chunk moves the job's cursor in
 * the transaction that changes its credentials, so a crash loses no change and repeats none.
 */

/** Which credentials a job touches: every given field must match (intersection). */
export interface StatusJobSelector {
  schemaId?: string | undefined;
  holderDid?: string | undefined;
  /** The keyed hash of the recipient email (src/issuance/email-hash.ts), never the address. */
  emailHash?: string | undefined;
  batchId?: string | undefined;
  kid?: string | undefined;
  /** Issued at or after. */
  issuedAfter?: Date | undefined;
  /** Issued strictly before. */
  issuedBefore?: Date | undefined;
  credentialIds?: string[] | undefined;
}

export type StatusJobState = 'running' | 'done' | 'failed';

export interface NewStatusJob {
  id: string;
  change: StatusChange;
  selector: StatusJobSelector;
  reason: string;
  actor: string;
  createdAt: Date;
  /**
   * The count the operator confirmed (docs/operations.md "Bulk status changes"): when the selection
   * made now holds another number, nothing is recorded and `create` throws {@link SelectionChanged}.
   */
  expectedCount?: number | undefined;
}

/** The selection no longer holds the count the operator confirmed: no job was recorded. */
export class SelectionChanged extends Error {
  override name = 'SelectionChanged';
  constructor(
    readonly expectedCount: number,
    readonly count: number,
  ) {
    super(`the selector now matches ${count} credential(s), not the ${expectedCount} expected`);
  }
}

export interface StatusJobRecord {
  id: string;
  change: StatusChange;
  /** The selector as stored (JSON; dates as ISO strings, the email as its hash). */
  selector: string;
  reason: string;
  actor: string;
  state: StatusJobState;
  total: number;
  done: number;
  failed: number;
  error: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/** One chunk's work: `worked` items passed the cursor; `finished` when none is left after it. */
export interface ChunkOutcome {
  worked: number;
  done: number;
  failed: number;
  /** Partitions whose statuses changed in this chunk. */
  partitions: number[];
  finished: boolean;
}

/** A credential left to a back-end with its own revocation registry (Iden3). */
export interface ExternalItem {
  credentialId: string;
  revocationNonce: number;
  proofType: string;
}

export interface StatusJobStore {
  /** How many credentials the selector matches now (a dry run). */
  count(selector: StatusJobSelector): Promise<number>;
  /**
   * One transaction: the job, its items (the selection at this instant), its total, and a lease
   * for `owner` until `leaseMs` from now. Answers the job.
   */
  create(job: NewStatusJob, owner: string, leaseMs: number): Promise<StatusJobRecord>;
  get(id: string): Promise<StatusJobRecord | undefined>;
  /** Takes the lease of a running job when it is free, expired or already `owner`'s. */
  lease(id: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Gives the lease up (a process stopping), so another instance may take the job at once. */
  releaseLease(id: string, owner: string): Promise<void>;
  /** Running jobs nobody holds (lease expired or released): what the sweep takes over. */
  unleasedJobs(limit: number): Promise<string[]>;
  /**
   * One transaction under `owner`'s lease (undefined when the lease was lost): the next `limit`
   * items after the cursor get the job's change where it applies (each audited with the job's
   * actor, reason and id, each with its webhook event while an endpoint exists), their partitions'
   * cached tokens are dropped, the cursor and counts move and the lease is renewed. A credential of
   * `externalProofTypes` to revoke is passed over, for {@link pendingExternal}.
   */
  applyChunk(
    id: string,
    owner: string,
    leaseMs: number,
    limit: number,
    externalProofTypes: readonly string[],
    at: Date,
  ): Promise<ChunkOutcome | undefined>;
  /** The job's items of `proofTypes` not revoked yet (its revoke is theirs to apply). */
  pendingExternal(id: string, proofTypes: readonly string[]): Promise<ExternalItem[]>;
  /** The status list partitions the job's items live in. */
  partitions(id: string): Promise<number[]>;
  /**
   * Ends the job under `owner`'s lease: `done` (then done = total − failed) or `failed` with
   * `error`. False when the lease was lost.
   */
  finish(id: string, owner: string, state: 'done' | 'failed', at: Date, error?: string): Promise<boolean>;
  /**
   * Records a failed run (the lease is released): answers how many runs have failed so far.
   */
  recordFailure(id: string, owner: string, error: string): Promise<number>;
}

/** What one item's change does, from the credential as it is now. */
export type ItemAction = 'change' | 'done' | 'failed' | 'external';

/** The facts of one job item that decide its action. */
export interface ItemFacts {
  /** Absent: the credential is gone (never happens: issuances are not deleted). */
  status: CredentialStatus | null;
  proofType: string | null;
  /** Its partition's bits, null without a status slot. */
  bits: number | null;
}

/**
 * Already in the target status counts as done; revoked is final (suspend and unsuspend of a
 * revoked credential fail); suspension needs a 2-bit status list slot (docs/interface.md).
 */
export function itemAction(change: StatusChange, item: ItemFacts, external: readonly string[]): ItemAction {
  if (item.status === null) return 'failed';
  if (change === 'revoke') {
    if (item.status === 1) return 'done';
    return item.proofType !== null && external.includes(item.proofType) ? 'external' : 'change';
  }
  if (change === 'suspend') {
    if (item.status === 2) return 'done';
    if (item.status === 1 || item.bits !== 2) return 'failed';
    return 'change';
  }
  if (item.status === 0) return 'done';
  if (item.status === 1) return 'failed';
  return 'change';
}

/** The audit actor of a job's changes. */
export const jobAudit = (job: { actor: string; reason: string; id: string }): AuditActor => ({
  actor: job.actor,
  reason: job.reason,
  jobId: job.id,
});

/** The selector as stored with the job. */
export function selectorJson(s: StatusJobSelector): string {
  return JSON.stringify({
    ...s,
    ...(s.issuedAfter ? { issuedAfter: s.issuedAfter.toISOString() } : {}),
    ...(s.issuedBefore ? { issuedBefore: s.issuedBefore.toISOString() } : {}),
  });
}
