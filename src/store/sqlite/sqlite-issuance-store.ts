import { randomInt } from 'node:crypto';
import Database from 'better-sqlite3';
import { credentialDeliveredEvent, credentialDeliveryFailedEvent } from '../../events/builders.js';
import { envelopeSha256, insertedRecord } from '../issuance-row.js';
import { pickFreeSlot } from '../slot-allocation.js';
import type {
  AuditActor,
  BatchInsertOutcome,
  InsertOutcome,
  IssuanceRecord,
  IssuanceStore,
  NewIssuance,
  StatusSlot,
} from '../store.js';
import type { SqliteDatabase } from './database.js';
import { GroupCommit } from './group-commit.js';
import { SqliteAuditStore } from './sqlite-audit-store.js';
import { type IssuanceRow, rowToIssuance } from './sqlite-issuance-rows.js';
import { prepareIssuanceStatements } from './sqlite-issuance-statements.js';
import { SqliteWebhookStore } from './sqlite-webhook-store.js';

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
  private readonly stmts: ReturnType<typeof prepareIssuanceStatements>;
  /** Inserts and "uploaded" marks of one event-loop turn commit together (group-commit.ts). */
  private readonly writes: GroupCommit;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly audit = new SqliteAuditStore(db),
    private readonly webhooks = new SqliteWebhookStore(db),
  ) {
    this.writes = new GroupCommit(db);
    this.stmts = prepareIssuanceStatements(db);
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

  async insertIssuances(
    batch: readonly NewIssuance[],
    options: { audit?: AuditActor | undefined },
  ): Promise<BatchInsertOutcome> {
    // The whole batch in one savepoint of the turn's group: a conflict on any of its issuances
    // throws, and the savepoint's rollback leaves none of them written.
    try {
      const records = await this.writes.run(() =>
        batch.map((n) => {
          const outcome = this.recordIssuance(n, { dedupe: false, audit: options.audit });
          if (outcome.kind !== 'inserted') throw new InsertConflict('slot-taken');
          return outcome.record;
        }),
      );
      return { kind: 'inserted', records };
    } catch (err) {
      if (!(err instanceof InsertConflict)) throw err;
      return err.kind === 'same-id' ? { kind: 'duplicate' } : { kind: err.kind };
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
      // The inserting request's lease on its own upload (issuance-store.ts: uploadDueAt).
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
    // Most sweeps find nothing due: a read (the WAL's snapshot) answers them without the write
    // lock an IMMEDIATE transaction takes; what it finds is leased under the lock, read again.
    if (this.stmts.due.all(t, t, 1).length === 0) return [];
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
        this.webhooks.insertEvent(credentialDeliveredEvent(credentialId, storagePath, row.attempts), at);
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
          credentialDeliveryFailedEvent(credentialId, row.attempts, error),
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
