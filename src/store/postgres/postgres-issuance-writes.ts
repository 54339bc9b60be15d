import { createHash, randomInt } from 'node:crypto';
import { credentialDeliveredEvent } from '../../events/builders.js';
import { filledByDatabase } from '../../events/database-filled.js';
import type { AuditActor } from '../../model.js';
import type { InsertOutcome, NewIssuance } from '../issuance-store.js';
import { LOCK_DEDUPE_NAMESPACE, lockSpace, type PgPool, withTransaction } from './database.js';
import { hotStatement } from './shared-calls.js';

// Counter rows per partition (see status_list_allocations): few enough to sum on every read.
export const ALLOCATION_SHARDS = 16;

interface UploadedMark {
  credentialId: string;
  storagePath: string | null;
  at: Date;
  resolve(): void;
  reject(err: unknown): void;
}

interface PendingRecord {
  n: NewIssuance;
  /** SHA-256 of its envelope's ciphertext (null: no envelope). */
  digest: string | null;
  options: { dedupe: boolean; audit?: AuditActor | undefined };
  /** Times it met a deadlock with another instance's group (it is then written again). */
  deadlocks: number;
  resolve(outcome: RecordedOutcome): void;
  reject(err: unknown): void;
}

// At most this many records per call: each is a subtransaction, and a transaction with more than
// 64 of them overflows every backend's snapshot cache (PostgreSQL "Subtransactions").
const RECORDS_PER_CALL = 48;
const DEADLOCK_RETRIES = 3;

// The records and marks of one turn of the event loop, in one statement, one transaction and one
// commit (functions/record-issuances.sql).
const recordIssuancesSql = (schema: string) => `SELECT o, outcome, existing, error_code, error_message
  FROM ${schema}record_issuances($1::jsonb, $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[])`;
const RECORD_ISSUANCES_SQL = recordIssuancesSql('');

/** A row record_issuances returns: record `o`'s outcome or error (`o` 0: the marks' error). */
interface RecordRow {
  o: number;
  outcome: InsertOutcome['kind'] | null;
  existing: string | null;
  error_code: string | null;
  error_message: string | null;
}

/** A row's own error, raised inside its subtransaction, as pg would have thrown it alone. */
function rowError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, severity: 'ERROR' });
}

/** The second key of a hosted issuance's dedupe lock: its holder, schema, proof type and subject hash. */
function dedupeLockKey(n: NewIssuance): number {
  return createHash('sha256')
    .update(JSON.stringify([n.holderDid, n.schemaId, n.proofType, n.subjectHash]))
    .digest()
    .readInt32BE(0);
}

/** One record of record_issuances' JSON (functions/record-issuances.sql), `o` its place in the call. */
function recordRow(
  o: number,
  n: NewIssuance,
  digest: string | null,
  options: { audit?: AuditActor | undefined },
  key: number | null,
  shard: number,
  lockSpaceOf: object,
) {
  return {
    o,
    credential_id: n.credentialId,
    channel: n.channel,
    user_id: n.userId,
    holder_did: n.holderDid,
    schema_id: n.schemaId,
    proof_type: n.proofType,
    nonce: n.revocationNonce,
    slot_partition: n.statusSlot?.partition ?? null,
    slot_index: n.statusSlot?.index ?? null,
    subject_hash: n.subjectHash,
    kid: n.kid,
    created_at: n.createdAt,
    expires_at: n.expiresAt,
    // Kept in issuance_envelopes until the "uploaded" mark deletes it; null: nothing to upload.
    envelope: n.envelope ? JSON.stringify(n.envelope) : null,
    envelope_sha256: digest,
    // Nothing to upload (oid4vci, no envelope): never due; record_issuance stores state 'none'.
    next_attempt_at: n.envelope ? (n.uploadDueAt ?? n.createdAt) : null,
    lease_until: (n.envelope && n.uploadDueAt) ?? null,
    email_hash: n.emailHash ?? null,
    batch_id: n.batchId ?? null,
    renewed_from: n.renewedFrom ?? null,
    shard: n.statusSlot ? shard : null,
    // Two identical hosted requests on two instances must not both sign: they take turns on this.
    lock_space: key === null ? null : lockSpace(lockSpaceOf, LOCK_DEDUPE_NAMESPACE),
    lock_key: key,
    audit_actor: options.audit?.actor ?? null,
    audit_reason: options.audit?.reason ?? null,
    event_id: n.event?.id ?? null,
    event_type: n.event?.type ?? null,
    event_data: n.event?.data ?? null,
  };
}

/**
 * A whole batch in one transaction of its own (OpenID4VCI batch issuance), through the same
 * record_issuances: when any record is refused or fails, the transaction rolls back and none is
 * written. Its outcome: `inserted` for all, or the first other outcome.
 */
export async function recordBatch(
  pool: PgPool,
  batch: ReadonlyArray<{ n: NewIssuance; digest: string | null }>,
  options: { audit?: AuditActor | undefined },
): Promise<InsertOutcome['kind']> {
  const shard = randomInt(ALLOCATION_SHARDS);
  const json = JSON.stringify(
    batch.map(({ n, digest }, i) => recordRow(i + 1, n, digest, options, null, shard, pool)),
  );
  for (let attempt = 0; ; attempt++) {
    try {
      return await withTransaction(pool, async (client) => {
        const { rows } = await client.query<{
          outcome: InsertOutcome['kind'] | null;
          error_code: string | null;
          error_message: string | null;
        }>({ name: 'pg-record-batch', text: RECORD_ISSUANCES_SQL, values: [json, [], [], [], [], [], []] });
        const refused = rows.find((r) => r.error_code !== null || r.outcome !== 'inserted');
        if (refused?.error_code) throw rowError(refused.error_code, refused.error_message!);
        if (refused) throw new BatchRefused(refused.outcome!);
        return 'inserted' as const;
      });
    } catch (err) {
      if (err instanceof BatchRefused) return err.outcome;
      // A lock cycle with another instance's group, rolled back by the server: write it again.
      if ((err as { code?: string }).code === '40P01' && attempt < DEADLOCK_RETRIES) continue;
      throw err;
    }
  }
}

/** Thrown inside recordBatch's transaction to roll it back, answered as the outcome. */
class BatchRefused extends Error {
  constructor(readonly outcome: InsertOutcome['kind']) {
    super(outcome);
  }
}

/** A record's answer from record_issuances: its outcome and the duplicate it found. */
export interface RecordedOutcome {
  outcome: InsertOutcome['kind'];
  existing: string | null;
}

/**
 * The group commit of PostgresIssuanceStore: the records and "uploaded" marks asked for in one
 * turn of the event loop (concurrent requests) are written together, in one transaction: a refused
 * or failing record rolls back alone, and nothing resolves before the commit.
 */
export class PgIssuanceWrites {
  /** insertIssuance calls waiting for this turn of the event loop's group (flushWrites). */
  private records: PendingRecord[] = [];
  /** markUploaded calls waiting for the same group. */
  private marks: UploadedMark[] = [];
  private writesScheduled = false;
  /** The call under way: one at a time, and what arrives meanwhile waits for the next. */
  private writing: Promise<void> | undefined;

  /** The group's call of record_issuances (shared-calls.ts hotStatement). */
  private readonly recordIssuances: (values: unknown[]) => Promise<RecordRow[]>;

  constructor(private readonly pool: PgPool) {
    this.recordIssuances = hotStatement(pool, 'record_issuances', 'pg-record-issuances', recordIssuancesSql);
  }

  /** Resolves once committed. */
  record(
    n: NewIssuance,
    digest: string | null,
    options: { dedupe: boolean; audit?: AuditActor | undefined },
  ): Promise<RecordedOutcome> {
    return new Promise((resolve, reject) => {
      this.records.push({ n, digest, options, deadlocks: 0, resolve, reject });
      this.scheduleWrites();
    });
  }

  /**
   * Resolves once the mark is committed. Uploads finishing at about the same time (one per
   * concurrent request) share one UPDATE, in the same call and transaction as the records of the
   * same turn of the event loop.
   */
  markUploaded(credentialId: string, storagePath: string | null, at: Date): Promise<void> {
    return new Promise((resolve, reject) => {
      this.marks.push({ credentialId, storagePath, at, resolve, reject });
      this.scheduleWrites();
    });
  }

  private scheduleWrites(): void {
    if (this.writesScheduled || this.writing) return;
    this.writesScheduled = true;
    setImmediate(() => {
      this.writesScheduled = false;
      this.startWriting();
    });
  }

  /**
   * One call at a time per instance (classic group commit: while a call runs, the next group
   * gathers), so this instance's groups never wait on each other's locks, and each is as large as
   * the load makes it; at most RECORDS_PER_CALL records a call, with every mark queued.
   */
  private startWriting(): void {
    if (this.writing || (this.records.length === 0 && this.marks.length === 0)) return;
    const records = this.records.splice(0, RECORDS_PER_CALL);
    const marks = this.marks;
    this.marks = [];
    this.writing = this.writeGroup(records, marks).finally(() => {
      this.writing = undefined;
      if (this.records.length > 0 || this.marks.length > 0) this.scheduleWrites();
    });
  }

  /** Writes what is queued now and waits until it is written (before the pool closes). */
  async drain(): Promise<void> {
    for (;;) {
      if (this.writing) await this.writing;
      else if (this.records.length > 0 || this.marks.length > 0) this.startWriting();
      else return;
    }
  }

  private async writeGroup(records: PendingRecord[], marks: UploadedMark[]): Promise<void> {
    if (records.length === 0 && marks.length === 0) return;
    // Dedupe locks in one order on every instance (no lock cycle between two groups); marks by id.
    const ordered = records
      .map((r) => ({ r, key: r.options.dedupe ? dedupeLockKey(r.n) : null }))
      .sort((a, b) => (a.key ?? Number.MAX_SAFE_INTEGER) - (b.key ?? Number.MAX_SAFE_INTEGER));
    marks.sort((a, b) => (a.credentialId < b.credentialId ? -1 : a.credentialId > b.credentialId ? 1 : 0));
    // One allocation counter row per partition for the whole call: a call holds its row locks
    // until it commits, so two calls (two instances) taking several in different orders could
    // wait on each other.
    const shard = randomInt(ALLOCATION_SHARDS);
    const json = JSON.stringify(
      ordered.map(({ r: { n, digest, options }, key }, i) =>
        recordRow(i + 1, n, digest, options, key, shard, this.pool),
      ),
    );
    let rows: RecordRow[];
    // Each mark's `credential.delivered`, whose `attempts` the function counts as it marks.
    const delivered = marks.map((m) =>
      filledByDatabase(credentialDeliveredEvent(m.credentialId, m.storagePath, 0), 'attempts', 0),
    );
    const values = [
      json,
      marks.map((m) => m.credentialId),
      marks.map((m) => m.storagePath),
      marks.map((m) => m.at),
      delivered.map((e) => e.id),
      delivered.map((e) => e.head),
      delivered.map((e) => e.tail),
    ];
    try {
      rows = await this.recordIssuances(values);
    } catch (err) {
      for (const { r } of ordered) r.reject(err);
      for (const m of marks) m.reject(err);
      return;
    }
    let marksError: Error | undefined;
    for (const row of rows) {
      if (row.o === 0) {
        marksError = rowError(row.error_code!, row.error_message!);
        continue;
      }
      const r = ordered[row.o - 1]!.r;
      if (row.error_code === null) r.resolve({ outcome: row.outcome!, existing: row.existing });
      else if (row.error_code === '40P01' && r.deadlocks < DEADLOCK_RETRIES) {
        // A lock cycle with another instance's group, rolled back by the server: write it again
        // (the other group has committed or rolled back by now).
        r.deadlocks++;
        this.records.push(r);
        this.scheduleWrites();
      } else r.reject(rowError(row.error_code, row.error_message!));
    }
    for (const m of marks) {
      if (marksError) m.reject(marksError);
      else m.resolve();
    }
  }
}
