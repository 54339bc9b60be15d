import { createHash } from 'node:crypto';
import type { ProofType } from '../model.js';
import type {
  Channel,
  CredentialStatus,
  IssuanceRecord,
  IssuanceSummary,
  NewIssuance,
  UploadBody,
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
  /** SHA-256 (hex) of the envelope's ciphertext; null for oid4vci and for rows from before it. */
  envelope_sha256: string | null;
  /** `issuance_envelopes.body` (RECORD_SELECT's join): the envelope JSON while not yet delivered. */
  envelope_body: string | null;
  upload_state: UploadState;
  upload_attempts: number;
  next_attempt_at: Epoch | null;
  lease_until: Epoch | null;
  last_error: string | null;
  storage_path: string | null;
  uploaded_at: Time | null;
}

/**
 * The columns a record is read from, the same on both engines. Never the retired `envelope` column
 * (docs/architecture.md "Envelopes until delivered"): the envelope comes from `issuance_envelopes`.
 */
const RECORD_COLUMNS = [
  'credential_id',
  'channel',
  'user_id',
  'holder_did',
  'schema_id',
  'proof_type',
  'revocation_nonce',
  'status_partition',
  'status_index',
  'subject_hash',
  'kid',
  'created_at',
  'expires_at',
  'status',
  'revoked_at',
  'suspended_at',
  'envelope_sha256',
  'upload_state',
  'upload_attempts',
  'next_attempt_at',
  'lease_until',
  'last_error',
  'storage_path',
  'uploaded_at',
] as const satisfies ReadonlyArray<keyof IssuanceColumns<unknown, unknown, unknown>>;

/** The columns of IssuanceColumns that RECORD_COLUMNS leaves out: none may be (a type error names it). */
type Unread = Exclude<
  keyof IssuanceColumns<unknown, unknown, unknown>,
  (typeof RECORD_COLUMNS)[number] | 'envelope_body'
>;

/** The record columns of the issuance `alias`, for a SELECT or a RETURNING list. */
export function recordColumns(
  alias: string,
  _everyColumnRead: [Unread] extends [never] ? true : Unread = true,
) {
  return RECORD_COLUMNS.map((c) => `${alias}.${c}`).join(', ');
}

/**
 * `SELECT … FROM` the issuances as `i` with their envelopes while undelivered: every read of a
 * whole record (IssuanceColumns) starts with this, then its `WHERE` on `i`.
 */
export const RECORD_SELECT = `SELECT ${recordColumns('i')}, e.body AS envelope_body
  FROM issuances i LEFT JOIN issuance_envelopes e ON e.credential_id = i.credential_id`;

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
    envelope: r.envelope_body === null ? null : (JSON.parse(r.envelope_body) as UploadBody),
    envelopeSha256: r.envelope_sha256,
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
export function insertedRecord(n: NewIssuance, digest: string | null): IssuanceRecord {
  const { uploadDueAt, emailHash: _, event: __, batchId: ___, renewedFrom: ____, ...issuance } = n;
  return {
    ...issuance,
    envelopeSha256: digest,
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

/** SHA-256 (hex) of an envelope's ciphertext, the decoded `data` (IssuanceRecord.envelopeSha256). */
export function envelopeSha256(envelope: Pick<UploadBody, 'data'>): string {
  return createHash('sha256').update(Buffer.from(envelope.data, 'base64')).digest('hex');
}
