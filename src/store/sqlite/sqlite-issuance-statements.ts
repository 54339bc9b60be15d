import { RECORD_SELECT } from '../issuance-row.js';
import type { UploadState } from '../store.js';
import type { SqliteDatabase } from './database.js';
import type { IssuanceRow } from './sqlite-issuance-rows.js';

/** The prepared statements of SqliteIssuanceStore. */
export function prepareIssuanceStatements(db: SqliteDatabase) {
  return {
    // Only a partition with today's size and bits is open: after a change of
    // STATUS_LIST_BITS or STATUS_LIST_PARTITION_SIZE new credentials go to a new partition.
    openPartition: db.prepare<[number, number], { partition: number; size: number; allocated: number }>(
      'SELECT partition, size, allocated FROM status_list_partitions WHERE allocated < size AND size = ? AND bits = ? ORDER BY partition LIMIT 1',
    ),
    maxPartition: db.prepare<[], { m: number | null }>(
      'SELECT MAX(partition) AS m FROM status_list_partitions',
    ),
    createPartition: db.prepare(
      'INSERT OR IGNORE INTO status_list_partitions (partition, size, bits, allocated, created_at) VALUES (?, ?, ?, 0, ?)',
    ),
    slotTaken: db.prepare<[number, number], { x: number }>(
      'SELECT 1 AS x FROM issuances WHERE status_partition = ? AND status_index = ?',
    ),
    slotsOf: db.prepare<[number], { i: number }>(
      'SELECT status_index AS i FROM issuances WHERE status_partition = ?',
    ),
    // Counts the slot in its partition if the partition exists, is not full and has the index.
    bumpPartition: db.prepare<[number, number]>(
      'UPDATE status_list_partitions SET allocated = allocated + 1 WHERE partition = ? AND allocated < size AND ? < size',
    ),
    nonce: db.prepare<[number], { x: number }>('SELECT 1 AS x FROM issuances WHERE revocation_nonce = ?'),
    // `+i.proof_type`, not `i.proof_type`: a bound value compared with a column that a partial
    // index's WHERE names (issuances_bjj_created, on the Iden3 proof type) makes SQLite
    // compile the statement again at every binding (sqlite.org/c3ref/prepare.html, "the
    // specific value bound to a host parameter … might influence the choice of query plan"),
    // several times the cost of the lookup itself; the unary + keeps the term out of that
    // comparison. The plan is the same: holder_did's index.
    duplicate: db.prepare<[string, string, string, string, string], IssuanceRow>(
      `${RECORD_SELECT} WHERE i.holder_did = ? AND i.schema_id = ? AND +i.proof_type = ? AND i.subject_hash = ?
       AND i.channel = 'hosted' AND i.status = 0 AND i.expires_at > ? ORDER BY i.created_at DESC LIMIT 1`,
    ),
    // The retired `envelope` column gets '' (migration 016): the envelope has its own table.
    insert: db.prepare(
      `INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
         status_partition, status_index, subject_hash, kid, created_at, expires_at, envelope, envelope_sha256,
         upload_state, next_attempt_at, lease_until, email_hash, batch_id, renewed_from)
       VALUES (@credentialId, @channel, @userId, @holderDid, @schemaId, @proofType, @revocationNonce,
         @partition, @index, @subjectHash, @kid, @createdAt, @expiresAt, '', @envelopeSha256,
         CASE WHEN @channel = 'oid4vci' THEN 'none' ELSE 'pending' END, @nextAttemptAt,
         @leaseUntil, @emailHash, @batchId, @renewedFrom)`,
    ),
    insertEnvelope: db.prepare<[string, string]>(
      'INSERT INTO issuance_envelopes (credential_id, body) VALUES (?, ?)',
    ),
    deleteEnvelope: db.prepare<[string]>('DELETE FROM issuance_envelopes WHERE credential_id = ?'),
    get: db.prepare<[string], IssuanceRow>(`${RECORD_SELECT} WHERE i.credential_id = ?`),
    getByNonce: db.prepare<[number], IssuanceRow>(`${RECORD_SELECT} WHERE i.revocation_nonce = ?`),
    due: db.prepare<[number, number, number], IssuanceRow>(
      `${RECORD_SELECT} WHERE i.upload_state = 'pending' AND i.next_attempt_at <= ?
       AND (i.lease_until IS NULL OR i.lease_until < ?) ORDER BY i.next_attempt_at LIMIT ?`,
    ),
    lease: db.prepare(
      `UPDATE issuances SET lease_until = ? WHERE credential_id = ? AND upload_state = 'pending'
       AND (lease_until IS NULL OR lease_until < ?)`,
    ),
    uploaded: db.prepare<[string | null, string, string], { attempts: number }>(
      `UPDATE issuances SET upload_state = 'uploaded', storage_path = ?, uploaded_at = ?, next_attempt_at = NULL,
         lease_until = NULL, last_error = NULL, upload_attempts = upload_attempts + 1 WHERE credential_id = ?
       RETURNING upload_attempts AS attempts`,
    ),
    failed: db.prepare<
      { error: string; next: number; id: string; giveUpAfter: number },
      { attempts: number; state: UploadState }
    >(
      `UPDATE issuances SET last_error = @error, lease_until = NULL, upload_attempts = upload_attempts + 1,
         upload_state = CASE WHEN upload_attempts + 1 >= @giveUpAfter THEN 'failed' ELSE 'pending' END,
         next_attempt_at = CASE WHEN upload_attempts + 1 >= @giveUpAfter THEN NULL ELSE @next END
       WHERE credential_id = @id AND upload_state = 'pending'
       RETURNING upload_attempts AS attempts, upload_state AS state`,
    ),
    retryOne: db.prepare<[number, string], { id: string }>(
      `UPDATE issuances SET upload_state = 'pending', upload_attempts = 0, next_attempt_at = ?, lease_until = NULL
       WHERE credential_id = ? AND upload_state = 'failed' RETURNING credential_id AS id`,
    ),
    retryAll: db.prepare<[number], { id: string }>(
      `UPDATE issuances SET upload_state = 'pending', upload_attempts = 0, next_attempt_at = ?, lease_until = NULL
       WHERE upload_state = 'failed' RETURNING credential_id AS id`,
    ),
    failedCount: db.prepare<[], { n: number }>(
      "SELECT COUNT(*) AS n FROM issuances WHERE upload_state = 'failed'",
    ),
    nextDue: db.prepare<[], { t: number | null }>(
      // A leased upload is not due before its lease ends (else the worker would spin on it).
      "SELECT MIN(MAX(next_attempt_at, COALESCE(lease_until, 0))) AS t FROM issuances WHERE upload_state = 'pending'",
    ),
    makeDue: db.prepare(
      // Also drops leases: at start-up a lease can only be a dead process's (a live one that
      // shares the file may upload the same envelope again, which externalId makes harmless).
      "UPDATE issuances SET next_attempt_at = MIN(next_attempt_at, ?), lease_until = NULL WHERE upload_state = 'pending'",
    ),
    kidExpiry: db.prepare<[string], { t: string | null }>(
      'SELECT MAX(expires_at) AS t FROM issuances WHERE kid = ?',
    ),
    pending: db.prepare<[], { n: number }>(
      "SELECT COUNT(*) AS n FROM issuances WHERE upload_state = 'pending'",
    ),
    oldestPending: db.prepare<[], { t: string | null }>(
      // Left alone, the planner walks issuances_created from the oldest row to the first pending one.
      "SELECT MIN(created_at) AS t FROM issuances INDEXED BY issuances_outbox_pending WHERE upload_state = 'pending'",
    ),
  };
}
