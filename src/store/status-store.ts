import type { AuditActor, CredentialStatus, StatusChange } from '../model.js';
import type { IssuanceRecord } from './issuance-store.js';
import type { NewWebhookEvent } from './webhook-store.js';

export interface PartitionRecord {
  partition: number;
  size: number;
  bits: 1 | 2;
  allocated: number;
  publishedAt: Date | null;
  token: string | null;
  etag: string | null;
}

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
    /** Its `status_list.published` webhook event, written with the token (while an endpoint exists). */
    event?: NewWebhookEvent,
  ): Promise<boolean>;
  /**
   * Applies a status change in one transaction with the partition's cache invalidation.
   * Returns the record after, or undefined for an unknown nonce.
   */
  changeStatus(
    nonce: number,
    change: StatusChange,
    at: Date,
    audit?: AuditActor,
  ): Promise<IssuanceRecord | undefined>;
}

/** A status change to apply together with another write (`Iden3Store.commitIden3State`). */
export interface StatusChangeRequest {
  nonce: number;
  change: StatusChange;
  at: Date;
  /** Recorded (action: the change, target: the nonce) in the same transaction. */
  audit?: AuditActor | undefined;
}
