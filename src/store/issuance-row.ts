import { createHash } from 'node:crypto';
import type { ProofType } from '../model.js';
import type {
  Channel,
  CredentialStatus,
  IssuanceRecord,
  IssuanceSummary,
  NewIssuance,
  StoredEnvelope,
  UploadState,
} from './store.js';

/**
 * The `issuances` table's columns as an engine's driver returns them. Both engines
 * share the columns and differ only in how a driver hands back a timestamp (`Time`: ISO text in
 * SQLite, `Date` from pg), a revocation nonce (`Nonce`: number, or pg's bigint string) and the
 * outbox's times (`Epoch`: epoch milliseconds in SQLite, `Date` from pg).
 */
export interface IssuanceColumns<Time, Nonce, Epoch> {
  credential_id: string;
  channel: Channel;
  user_id: string;
  holder_did: string;
  schema_id: string;
  proof_type: ProofType;
  revocation_nonce: Nonce;
  status_partition: number | null;
  status_index: number | null;
  subject_hash: string;
  kid: string;
  created_at: Time;
  expires_at: Time;
  status: CredentialStatus;
  revoked_at: Time | null;
  suspended_at: Time | null;
  envelope: string;
  upload_state: UploadState;
  upload_attempts: number;
  next_attempt_at: Epoch | null;
  lease_until: Epoch | null;
  last_error: string | null;
  storage_path: string | null;
  uploaded_at: Time | null;
}

/** The columns admin history may read: metadata only, never the envelope. */
export type SummaryColumns<Time, Nonce> = Pick<
  IssuanceColumns<Time, Nonce, never>,
  | 'credential_id'
  | 'channel'
  | 'holder_did'
  | 'schema_id'
  | 'proof_type'
  | 'revocation_nonce'
  | 'status_partition'
  | 'status_index'
  | 'kid'
  | 'created_at'
  | 'expires_at'
  | 'status'
  | 'revoked_at'
  | 'upload_state'
  | 'storage_path'
>;

/** How an engine's driver values become the record's. */
export interface ColumnReader<Time, Nonce, Epoch> {
  time(value: Time): Date;
  nonce(value: Nonce): number;
  epoch(value: Epoch): Date;
}

const orNull = <V>(value: V | null, read: (v: V) => Date): Date | null =>
  value === null ? null : read(value);

export function summaryFromRow<Time, Nonce>(
  r: SummaryColumns<Time, Nonce>,
  read: Pick<ColumnReader<Time, Nonce, never>, 'time' | 'nonce'>,
): IssuanceSummary {
  return {
    credentialId: r.credential_id,
    channel: r.channel,
    holderDid: r.holder_did,
    schemaId: r.schema_id,
    proofType: r.proof_type,
    revocationNonce: read.nonce(r.revocation_nonce),
    statusSlot:
      r.status_partition === null || r.status_index === null
        ? null
        : { partition: r.status_partition, index: r.status_index },
    kid: r.kid,
    createdAt: read.time(r.created_at),
    expiresAt: read.time(r.expires_at),
    status: r.status,
    revokedAt: orNull(r.revoked_at, read.time),
    uploadState: r.upload_state,
    storagePath: r.storage_path,
  };
}

export function issuanceFromRow<Time, Nonce, Epoch>(
  r: IssuanceColumns<Time, Nonce, Epoch>,
  read: ColumnReader<Time, Nonce, Epoch>,
): IssuanceRecord {
  return {
    ...summaryFromRow(r, read),
    userId: r.user_id,
    subjectHash: r.subject_hash,
    envelope: JSON.parse(r.envelope) as StoredEnvelope | null,
    suspendedAt: orNull(r.suspended_at, read.time),
    uploadAttempts: r.upload_attempts,
    nextAttemptAt: orNull(r.next_attempt_at, read.epoch),
    lastError: r.last_error,
    uploadedAt: orNull(r.uploaded_at, read.time),
  };
}

/**
 * The record an insert has just written, built from what was inserted rather than read back (and
 * its envelope parsed again): every engine's `insertIssuance` answers with this.
 */
export function insertedRecord(n: NewIssuance): IssuanceRecord {
  const { uploadDueAt, emailHash: _, event: __, batchId: ___, renewedFrom: ____, ...issuance } = n;
  return {
    ...issuance,
    status: 0,
    revokedAt: null,
    suspendedAt: null,
    uploadState: n.envelope ? 'pending' : 'none',
    uploadAttempts: 0,
    nextAttemptAt: n.envelope ? (uploadDueAt ?? n.createdAt) : null,
    lastError: null,
    storagePath: null,
    uploadedAt: null,
  };
}

/**
 * The envelope text a delivered issuance keeps (store.ts DeliveredEnvelope): the same JSON without
 * `data`, with `dataSha256`. One already delivered comes back unchanged.
 */
export function deliveredEnvelopeText(text: string): string {
  const envelope = JSON.parse(text) as Record<string, unknown>;
  if (typeof envelope.data !== 'string') return text;
  const { data, ...rest } = envelope;
  return JSON.stringify({
    ...rest,
    dataSha256: createHash('sha256').update(Buffer.from(data, 'base64')).digest('hex'),
  });
}
