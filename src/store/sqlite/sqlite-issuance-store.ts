import { randomInt } from 'node:crypto';
import Database from 'better-sqlite3';
import {
  type ColumnReader,
  envelopeSha256,
  type IssuanceColumns,
  insertedRecord,
  issuanceFromRow,
  RECORD_SELECT,
  type SummaryColumns,
  summaryFromRow,
} from '../issuance-row.js';
import { pickFreeSlot } from '../slot-allocation.js';
import type {
  AuditActor,
  InsertOutcome,
  IssuanceRecord,
  IssuanceStore,
  IssuanceSummary,
  NewIssuance,
  StatusSlot,
  UploadState,
} from '../store.js';
import { newWebhookEventId } from '../webhook-store.js';
import type { SqliteDatabase } from './database.js';
import { GroupCommit } from './group-commit.js';
import { SqliteAuditStore } from './sqlite-audit-store.js';
import { SqliteWebhookStore } from './sqlite-webhook-store.js';

type IssuanceRow = IssuanceColumns<string, number, number>;
export type SummaryRow = SummaryColumns<string, number>;

// ISO text timestamps; the outbox's times as epoch milliseconds.
const read: ColumnReader<string, number, number> = {
  time: (s) => new Date(s),
  nonce: (n) => n,
  epoch: (ms) => new Date(ms),
};

export const rowToSummary = (r: SummaryRow): IssuanceSummary => summaryFromRow(r, read);
export const rowToIssuance = (r: IssuanceRow): IssuanceRecord => issuanceFromRow(r, read);

type DuplicateQuery = Parameters<IssuanceStore['findLiveDuplicate']>[0];

/** A UNIQUE constraint the insert hit: thrown to roll the transaction back, answered as the outcome. */
class InsertConflict extends Error {
  constructor(readonly kind: 'nonce-taken' | 'slot-taken' | 'same-id') {
    super(kind);
  }
}

function uniqueConflict(err: unknown): InsertConflict['kind'] | undefined {
  if (!(err instanceof Database.SqliteError)) return undefined;
  if (err.code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
    return err.message.includes('issuances.credential_id') ? 'same-id' : undefined;
  if (err.code !== 'SQLITE_CONSTRAINT_UNIQUE') return undefined;
  if (err.message.includes('issuances.revocation_nonce')) return 'nonce-taken';
  if (err.message.includes('issuances.status_index')) return 'slot-taken';
  return undefined;
}

// Random probes before falling back to a scan of the partition's allocations.
const RANDOM_PROBES = 48;

export class SqliteIssuanceStore implements IssuanceStore {
  private readonly stmts;
  /** Inserts and "uploaded" marks of one event-loop turn commit together (group-commit.ts). */
  private readonly writes: GroupCommit;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly audit = new SqliteAuditStore(db),
    private readonly webhooks = new SqliteWebhookStore(db),
  ) {
    this.writes = new GroupCommit(db);
    this.stmts = {
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
      // index's WHERE names (issuances_bjj_created, proof_type = 'BJJ_SIG_2021') makes SQLite
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

  async proposeStatusSlot(partitionSize: number, bits: 1 | 2): Promise<StatusSlot> {
    for (;;) {
      let open = this.stmts.openPartition.get(partitionSize, bits);
      if (!open) {
        const next = (this.stmts.maxPartition.get()?.m ?? -1) + 1;
        this.stmts.createPartition.run(next, partitionSize, bits, new Date().toISOString());
        open = this.stmts.openPartition.get(partitionSize, bits);
        if (!open) continue;
      }
      const slot = this.pickSlot(open.partition, open.size);
      if (slot !== undefined) return { partition: open.partition, index: slot };
      // The scan found it full while `allocated` said otherwise (another process raced us): retry.
    }
  }

  // draft-ietf-oauth-status-list §13.2 (herd privacy): indexes are drawn at random, never sequential.
  private pickSlot(partition: number, size: number): number | undefined {
    for (let i = 0; i < RANDOM_PROBES; i++) {
      const idx = randomInt(size);
      if (!this.stmts.slotTaken.get(partition, idx)) return idx;
    }
    const allocated = new Uint8Array(Math.ceil(size / 8));
    for (const { i } of this.stmts.slotsOf.iterate(partition)) allocated[i >> 3]! |= 1 << (i & 7);
    const slot = pickFreeSlot(allocated, size);
    return slot < 0 ? undefined : slot;
  }

  async nonceInUse(nonce: number): Promise<boolean> {
    return this.stmts.nonce.get(nonce) !== undefined;
  }

  async findLiveDuplicate(q: DuplicateQuery) {
    const row = this.liveDuplicate(q);
    return row ? rowToIssuance(row) : undefined;
  }

  private liveDuplicate(q: DuplicateQuery): IssuanceRow | undefined {
    return this.stmts.duplicate.get(q.holderDid, q.schemaId, q.proofType, q.subjectHash, q.now.toISOString());
  }

  /** Commits the writes queued for this turn's group now (the store is closing). */
  flushWrites(): void {
    this.writes.flush();
  }

  async insertIssuance(
    n: NewIssuance,
    options: { dedupe: boolean; audit?: AuditActor | undefined },
  ): Promise<InsertOutcome> {
    // With the other writes of this turn, in its own savepoint of one IMMEDIATE transaction (taking
    // the write lock first, so two processes sharing the file serialize there).
    try {
      return await this.writes.run(() => this.recordIssuance(n, options));
    } catch (err) {
      if (!(err instanceof InsertConflict)) throw err;
      if (err.kind !== 'same-id') return { kind: err.kind };
      // Committed before this insert's savepoint was rolled back: read now, it is the issuance.
      const same = this.stmts.get.get(n.credentialId);
      if (!same) throw new Error(`credential ${n.credentialId} was recorded and is gone`);
      return { kind: 'duplicate', record: rowToIssuance(same) };
    }
  }

  /** The statements of one insert; run inside a savepoint, which a throw rolls back. */
  private recordIssuance(
    n: NewIssuance,
    options: { dedupe: boolean; audit?: AuditActor | undefined },
  ): InsertOutcome {
    // The same credential id (an Idempotency-Key's) recorded before is that issuance: the insert
    // meets it at the primary key (InsertConflict 'same-id', answered by insertIssuance), so that a
    // new id, every hosted one, costs no lookup before it.
    if (options.dedupe) {
      const dup = this.liveDuplicate({ ...n, now: n.createdAt });
      if (dup) return { kind: 'duplicate', record: rowToIssuance(dup) };
    }
    // A taken nonce or slot is left to the UNIQUE constraints (no lookups before the insert); the
    // InsertConflict thrown then rolls the partition's count back with the savepoint.
    if (
      n.statusSlot &&
      this.stmts.bumpPartition.run(n.statusSlot.partition, n.statusSlot.index).changes === 0
    )
      return { kind: 'slot-taken' };
    const digest = n.envelope ? envelopeSha256(n.envelope) : null;
    this.runInsert({
      credentialId: n.credentialId,
      channel: n.channel,
      userId: n.userId,
      holderDid: n.holderDid,
      schemaId: n.schemaId,
      proofType: n.proofType,
      revocationNonce: n.revocationNonce,
      partition: n.statusSlot?.partition ?? null,
      index: n.statusSlot?.index ?? null,
      subjectHash: n.subjectHash,
      kid: n.kid,
      createdAt: n.createdAt.toISOString(),
      expiresAt: n.expiresAt.toISOString(),
      envelopeSha256: digest,
      nextAttemptAt: n.envelope ? (n.uploadDueAt ?? n.createdAt).getTime() : null,
      // The inserting request's lease on its own upload (store.ts: uploadDueAt).
      leaseUntil: (n.envelope && n.uploadDueAt?.getTime()) ?? null,
      emailHash: n.emailHash ?? null,
      batchId: n.batchId ?? null,
      renewedFrom: n.renewedFrom ?? null,
    });
    // Kept until the "uploaded" mark deletes it (docs/architecture.md "Envelopes until delivered").
    if (n.envelope) this.stmts.insertEnvelope.run(n.credentialId, JSON.stringify(n.envelope));
    if (options.audit)
      this.audit.insertAudit({
        ...options.audit,
        at: n.createdAt,
        action: 'issue',
        target: n.credentialId,
      });
    if (n.event) this.webhooks.insertEvent(n.event, n.createdAt);
    return { kind: 'inserted', record: insertedRecord(n, digest) };
  }

  private runInsert(row: Record<string, string | number | null>): void {
    try {
      this.stmts.insert.run(row);
    } catch (err) {
      const kind = uniqueConflict(err);
      if (kind) throw new InsertConflict(kind);
      throw err;
    }
  }

  async get(credentialId: string) {
    const row = this.stmts.get.get(credentialId);
    return row ? rowToIssuance(row) : undefined;
  }

  async getByNonce(nonce: number) {
    const row = this.stmts.getByNonce.get(nonce);
    return row ? rowToIssuance(row) : undefined;
  }

  async latestExpiryForKid(kid: string): Promise<Date | undefined> {
    const t = this.stmts.kidExpiry.get(kid)?.t;
    return t ? new Date(t) : undefined;
  }

  async leaseDueUploads(now: Date, leaseMs: number, limit: number): Promise<IssuanceRecord[]> {
    const t = now.getTime();
    return this.db
      .transaction(() => {
        const rows = this.stmts.due.all(t, t, limit);
        return rows
          .filter((r) => this.stmts.lease.run(t + leaseMs, r.credential_id, t).changes === 1)
          .map(rowToIssuance);
      })
      .immediate();
  }

  async leaseUpload(credentialId: string, now: Date, leaseMs: number): Promise<boolean> {
    const t = now.getTime();
    return this.stmts.lease.run(t + leaseMs, credentialId, t).changes === 1;
  }

  /** Commits with the other writes of this turn (group-commit.ts). */
  async markUploaded(credentialId: string, storagePath: string | null, at: Date): Promise<void> {
    await this.writes.run(() => {
      const row = this.stmts.uploaded.get(storagePath, at.toISOString(), credentialId);
      // Delivered: the envelope goes (the issuance keeps its digest).
      this.stmts.deleteEnvelope.run(credentialId);
      if (row)
        this.webhooks.insertEvent(
          {
            id: newWebhookEventId(),
            type: 'credential.delivered',
            data: JSON.stringify({ credentialId, storagePath, attempts: row.attempts }),
          },
          at,
        );
    });
  }

  async markUploadFailed(
    credentialId: string,
    error: string,
    nextAttemptAt: Date,
    giveUpAfter: number,
  ): Promise<{ attempts: number; gaveUp: boolean }> {
    const tx = this.db.transaction(() => {
      const row = this.stmts.failed.get({
        error,
        next: nextAttemptAt.getTime(),
        id: credentialId,
        giveUpAfter,
      });
      if (row?.state === 'failed')
        this.webhooks.insertEvent(
          {
            id: newWebhookEventId(),
            type: 'credential.delivery_failed',
            data: JSON.stringify({ credentialId, attempts: row.attempts, lastError: error }),
          },
          new Date(),
        );
      return row;
    });
    const row = this.db.inTransaction ? tx() : tx.immediate();
    return { attempts: row?.attempts ?? 0, gaveUp: row?.state === 'failed' };
  }

  async retryFailedUploads(credentialIds: string[] | 'all', now: Date): Promise<string[]> {
    const t = now.getTime();
    if (credentialIds === 'all') return this.stmts.retryAll.all(t).map((r) => r.id);
    return this.db
      .transaction(() => credentialIds.flatMap((id) => this.stmts.retryOne.all(t, id).map((r) => r.id)))
      .immediate();
  }

  async countFailedUploads(): Promise<number> {
    return this.stmts.failedCount.get()?.n ?? 0;
  }

  async repairUnseenUploads(): Promise<number> {
    // The outbox reads pending uploads from issuances (issuances_outbox_pending): every one is seen.
    return 0;
  }

  async makePendingDue(now: Date): Promise<void> {
    this.stmts.makeDue.run(now.getTime());
  }

  async nextUploadDue(): Promise<Date | undefined> {
    const t = this.stmts.nextDue.get()?.t;
    return t == null ? undefined : new Date(t);
  }

  async countPendingUploads(): Promise<number> {
    return this.stmts.pending.get()?.n ?? 0;
  }

  async oldestPendingUpload(): Promise<Date | undefined> {
    const t = this.stmts.oldestPending.get()?.t;
    return t ? new Date(t) : undefined;
  }
}
