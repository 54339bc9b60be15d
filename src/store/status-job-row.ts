import type { StatusJobRecord } from './status-job-store.js';
import type { CredentialStatus } from './store.js';

/**
 * The `status_jobs` table's columns as an engine's driver returns them: the same on both engines
 * but for a timestamp (`Time`: ISO text in SQLite, `Date` from pg).
 */
export type StatusJobColumns<Time> = Pick<
  StatusJobRecord,
  'id' | 'change' | 'selector' | 'reason' | 'actor' | 'state' | 'total' | 'done' | 'failed' | 'error'
> & {
  cursor: string | null;
  lease_owner: string | null;
  attempts: number;
  created_at: Time;
  finished_at: Time | null;
};

/** A job's item joined to its issuance, as a chunk reads it (`Nonce`: number, or pg's bigint string). */
export interface StatusJobItemColumns<Nonce> {
  credential_id: string;
  revocation_nonce: Nonce | null;
  proof_type: string | null;
  status: CredentialStatus | null;
  status_partition: number | null;
  bits: number | null;
}

/** The record of a job row; `date` reads the engine's timestamps. */
export function statusJobFromRow<Time>(r: StatusJobColumns<Time>, date: (t: Time) => Date): StatusJobRecord {
  return {
    id: r.id,
    change: r.change,
    selector: r.selector,
    reason: r.reason,
    actor: r.actor,
    state: r.state,
    total: r.total,
    done: r.done,
    failed: r.failed,
    error: r.error,
    createdAt: date(r.created_at),
    finishedAt: r.finished_at === null ? null : date(r.finished_at),
  };
}
