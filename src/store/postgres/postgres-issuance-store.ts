import { createHash, randomInt } from 'node:crypto';
import { envelopeSha256, insertedRecord, RECORD_SELECT, recordColumns } from '../issuance-row.js';
import { pickFreeSlot } from '../slot-allocation.js';
import type {
  AuditActor,
  InsertOutcome,
  IssuanceRecord,
  IssuanceStore,
  NewIssuance,
  StatusSlot,
} from '../store.js';
import { LOCK_DEDUPE_NAMESPACE, type PgPool } from './database.js';
import { insertEventSql } from './postgres-webhook-store.js';
import { type IssuanceRow, rowToIssuance } from './rows.js';

type DuplicateQuery = Parameters<IssuanceStore['findLiveDuplicate']>[0];

// Random candidates checked in one round trip before falling back to a scan of the partition
// (each is one index probe on the server: enough for a partition up to about 85% full).
const RANDOM_PROBES = 16;
// Counter rows per partition (see status_list_allocations): few enough to sum on every read.
export const ALLOCATION_SHARDS = 16;

// Whether candidate slot c.i of partition p is taken: one probe of the slot's unique index per
// candidate. The LIMIT keeps the planner from turning the probes into an anti-join, which a cached
// generic plan reads as the whole partition's issuances (7.9 ms instead of 0.13 ms at 2,200 rows).
const SLOT_TAKEN = `LEFT JOIN LATERAL (SELECT 1 AS taken FROM issuances
      WHERE status_partition = p.partition AND status_index = c.i LIMIT 1) t ON true`;

// The first open partition of today's size and bits (after a change of STATUS_LIST_BITS or
// STATUS_LIST_PARTITION_SIZE new credentials go to a new partition) and the first of the random
// candidates that no issuance holds there.
export const PROPOSE_SQL = `SELECT p.partition, p.size,
    (SELECT c.i FROM unnest($3::int[]) WITH ORDINALITY AS c(i, o) ${SLOT_TAKEN}
      WHERE t.taken IS NULL ORDER BY c.o LIMIT 1) AS free
  FROM status_list_partitions p WHERE p.size = $1 AND p.bits = $2 AND NOT p.is_full
  ORDER BY p.partition LIMIT 1`;

// The live duplicates of a batch of hosted issuances (row `o` of the batch, its duplicate's id)
// and, in the same round trip, up to $9 free slots among random candidates of the first open
// partition of size $6 and bits $7 (see findLiveDuplicate).
export const DUPLICATES_AND_PROPOSALS_SQL = `WITH q AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
      WITH ORDINALITY AS q(holder, schema, proof, subject, now, o)),
  p AS (SELECT partition FROM status_list_partitions WHERE size = $6::int AND bits = $7::smallint AND NOT is_full
    ORDER BY partition LIMIT 1)
  SELECT q.o::int AS o, d.credential_id AS duplicate, NULL::int AS partition, NULL::int AS free
    FROM q CROSS JOIN LATERAL (SELECT credential_id FROM issuances WHERE holder_did = q.holder AND schema_id = q.schema
      AND proof_type = q.proof AND subject_hash = q.subject AND channel = 'hosted' AND status = 0 AND expires_at > q.now
      ORDER BY created_at DESC, seq DESC LIMIT 1) d
  UNION ALL
  (SELECT NULL, NULL, p.partition, c.i FROM p CROSS JOIN unnest($8::int[]) WITH ORDINALITY AS c(i, o) ${SLOT_TAKEN}
    WHERE t.taken IS NULL ORDER BY c.o LIMIT $9)`;

interface DuplicateLookup {
  q: DuplicateQuery;
  resolve(credentialId: string | undefined): void;
  reject(err: unknown): void;
}

// A slot proposed ahead of its proposeStatusSlot is handed out this fresh at most; with this many
// waiting no more are proposed (a hosted issuance with no status list asks for none).
const PROPOSAL_MAX_AGE_MS = 1000;
const PROPOSALS_KEPT = 64;

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
  resolve(outcome: { outcome: InsertOutcome['kind']; existing: string | null }): void;
  reject(err: unknown): void;
}

// At most this many records per call: each is a subtransaction, and a transaction with more than
// 64 of them overflows every backend's snapshot cache (PostgreSQL "Subtransactions").
const RECORDS_PER_CALL = 48;
const DEADLOCK_RETRIES = 3;

// The records and marks of one turn of the event loop, in one statement, one transaction and one
// commit (migration 013-record-issuances.sql).
const RECORD_ISSUANCES_SQL = `SELECT o, outcome, existing, error_code, error_message
  FROM record_issuances($1::jsonb, $2::text[], $3::text[], $4::timestamptz[])`;

/**
 * The pending uploads as `i`: the outbox's rows in issuance_envelopes (migration 023), whose
 * issuances are found by primary key, never by a scan of issuances.
 */
const PENDING = `issuance_envelopes e JOIN issuances i ON i.credential_id = e.credential_id
  WHERE e.due_at IS NOT NULL AND i.upload_state = 'pending'`;

/** The outbox's reads (exported for the query-plan tests); each names its parameters. */
export const OUTBOX_SQL = {
  /** $1 now, $2 the lease's end, $3 how many. */
  leaseDue: `UPDATE issuances i SET lease_until = $2
    FROM (SELECT e.credential_id, e.body FROM issuance_envelopes e JOIN issuances p ON p.credential_id = e.credential_id
          WHERE e.due_at <= $1 AND p.upload_state = 'pending' AND (p.lease_until IS NULL OR p.lease_until < $1)
          ORDER BY e.due_at LIMIT $3 FOR UPDATE OF p SKIP LOCKED) due
    WHERE i.credential_id = due.credential_id
    RETURNING ${recordColumns('i')}, due.body AS envelope_body`,
  // A leased upload is not due before its lease ends (else the worker would spin on it).
  nextDue: `SELECT MIN(GREATEST(i.next_attempt_at, i.lease_until)) AS t FROM ${PENDING}`,
  countPending: `SELECT count(*)::int AS n FROM ${PENDING}`,
  oldestPending: `SELECT min(i.created_at) AS t FROM ${PENDING}`,
  // Through issuances_upload_error_created: a failed upload always has an error (migration 023).
  countFailed:
    "SELECT count(*)::int AS n FROM issuances WHERE last_error IS NOT NULL AND upload_state = 'failed'",
  /**
   * $1 now, $2 the credential id the last page ended at ('' from the start), $3 the page's size,
   * $4 how many rows of issuance_envelopes_due's head to look at.
   *
   * A page of issuance_envelopes_undue (migration 025): each pending upload in it is given
   * its issuance's due time. The page is walked one index entry after another, each step the
   * next credential id after the last, so that no plan, with or without statistics, cached or
   * not, can read all the index's rows and sort them; each row of the page, and of the head, finds
   * its two rows by primary key in its own subquery (LIMIT 1 keeps it from being merged into a
   * join that reads the whole table), and the updates find their rows by primary key through
   * `= ANY`, as record_issuances does.
   *
   * The head of issuance_envelopes_due: a failed upload whose row still has a due time (an
   * instance of a version before 023 gave it up, writing issuances only) is taken out of that
   * index, which the outbox's reads would otherwise pass over every time.
   *
   * Rows another statement holds are skipped (found on a later pass), so this never waits on a
   * lock and takes part in no deadlock.
   */
  repairUnseen: `WITH RECURSIVE walk (credential_id, n) AS (
         SELECT (SELECT credential_id FROM issuance_envelopes WHERE due_at IS NULL AND credential_id > $2
                 ORDER BY credential_id LIMIT 1), 1
         UNION ALL
         SELECT (SELECT e.credential_id FROM issuance_envelopes e WHERE e.due_at IS NULL AND e.credential_id > w.credential_id
                 ORDER BY e.credential_id LIMIT 1), w.n + 1
         FROM walk w WHERE w.credential_id IS NOT NULL AND w.n < $3),
       page AS (SELECT credential_id FROM walk WHERE credential_id IS NOT NULL),
       unseen AS (SELECT u.credential_id FROM page CROSS JOIN LATERAL
         (SELECT e.credential_id FROM issuance_envelopes e JOIN issuances i ON i.credential_id = e.credential_id
          WHERE e.credential_id = page.credential_id AND i.credential_id = page.credential_id
            AND e.due_at IS NULL AND i.upload_state = 'pending'
          LIMIT 1 FOR UPDATE OF e, i SKIP LOCKED) u),
       head AS (SELECT credential_id FROM issuance_envelopes WHERE due_at IS NOT NULL ORDER BY due_at LIMIT $4),
       stale AS (SELECT s.credential_id FROM head CROSS JOIN LATERAL
         (SELECT e.credential_id FROM issuance_envelopes e JOIN issuances i ON i.credential_id = e.credential_id
          WHERE e.credential_id = head.credential_id AND i.credential_id = head.credential_id
            AND e.due_at IS NOT NULL AND i.upload_state = 'failed'
          LIMIT 1 FOR UPDATE OF e, i SKIP LOCKED) s),
       due AS (UPDATE issuance_envelopes e
         SET due_at = COALESCE((SELECT i.next_attempt_at FROM issuances i WHERE i.credential_id = e.credential_id), $1)
         WHERE e.credential_id = ANY (ARRAY(SELECT credential_id FROM unseen)) RETURNING e.credential_id),
       undue AS (UPDATE issuance_envelopes e SET due_at = NULL
         WHERE e.credential_id = ANY (ARRAY(SELECT credential_id FROM stale)) RETURNING e.credential_id)
     SELECT (SELECT count(*) FROM page)::int AS seen, (SELECT max(credential_id) FROM page) AS last,
       (SELECT count(*) FROM due)::int AS repaired, (SELECT count(*) FROM undue)::int AS cleared`,
};

/** How many rows of issuance_envelopes_undue one outbox sweep looks at (repairUnseenUploads). */
export const UNSEEN_PAGE = 500;
/** How many rows at the head of issuance_envelopes_due one outbox sweep looks at for stale ones. */
export const STALE_HEAD = 50;

/** A row's own error, raised inside its subtransaction, as pg would have thrown it alone. */
function rowError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, severity: 'ERROR' });
}

interface Proposal {
  size: number;
  bits: 1 | 2;
  slot: StatusSlot;
  at: number;
}

// draft-ietf-oauth-status-list §13.2 (herd privacy): indexes are drawn at random, never sequential.
function randomCandidates(partitionSize: number, count = RANDOM_PROBES): number[] {
  const drawn = new Set<number>();
  for (let i = 0; i < count; i++) drawn.add(randomInt(partitionSize));
  return [...drawn];
}

/** The second key of a hosted issuance's dedupe lock: its holder, schema, proof type and subject hash. */
function dedupeLockKey(n: NewIssuance): number {
  return createHash('sha256')
    .update(JSON.stringify([n.holderDid, n.schemaId, n.proofType, n.subjectHash]))
    .digest()
    .readInt32BE(0);
}

export class PostgresIssuanceStore implements IssuanceStore {
  /** Slots proposed by findLiveDuplicate, oldest first. */
  private proposals: Proposal[] = [];
  /** The partition size and bits last asked for: what findLiveDuplicate proposes a slot in. */
  private shape: { size: number; bits: 1 | 2 } | undefined;
  /** findLiveDuplicate calls waiting for this turn of the event loop's one query. */
  private lookups: DuplicateLookup[] = [];
  /** Where the next repairUnseenUploads page of issuance_envelopes_undue starts ('' from the first row). */
  private unseenAfter = '';
  /** insertIssuance calls waiting for this turn of the event loop's group (flushWrites). */
  private records: PendingRecord[] = [];
  /** markUploaded calls waiting for the same group. */
  private marks: UploadedMark[] = [];

  constructor(private readonly pool: PgPool) {}

  async proposeStatusSlot(partitionSize: number, bits: 1 | 2): Promise<StatusSlot> {
    this.shape = { size: partitionSize, bits };
    const now = Date.now();
    for (let p = this.proposals.shift(); p; p = this.proposals.shift()) {
      if (p.size === partitionSize && p.bits === bits && now - p.at < PROPOSAL_MAX_AGE_MS) return p.slot;
    }
    for (;;) {
      const candidates = randomCandidates(partitionSize);
      const { rows } = await this.pool.query<{ partition: number; size: number; free: number | null }>({
        name: 'pg-propose-slot',
        text: PROPOSE_SQL,
        values: [partitionSize, bits, candidates],
      });
      const open = rows[0];
      if (!open) {
        // Two instances may both open partition max+1: one insert wins, the other does nothing.
        await this.pool.query(
          `INSERT INTO status_list_partitions (partition, size, bits, created_at)
           SELECT COALESCE(MAX(partition), -1) + 1, $1, $2, $3 FROM status_list_partitions
           ON CONFLICT (partition) DO NOTHING`,
          [partitionSize, bits, new Date()],
        );
        continue;
      }
      if (open.free !== null) return { partition: open.partition, index: open.free };
      const slot = await this.scanForFreeSlot(open.partition, open.size);
      if (slot !== undefined) return { partition: open.partition, index: slot };
      await this.pool.query(
        `UPDATE status_list_partitions SET is_full = true
         WHERE partition = $1 AND (SELECT count(*) FROM issuances WHERE status_partition = $1) >= size`,
        [open.partition],
      );
    }
  }

  private async scanForFreeSlot(partition: number, size: number): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ i: number }>(
      'SELECT status_index AS i FROM issuances WHERE status_partition = $1',
      [partition],
    );
    const allocated = new Uint8Array(Math.ceil(size / 8));
    for (const { i } of rows) allocated[i >> 3]! |= 1 << (i & 7);
    const slot = pickFreeSlot(allocated, size);
    return slot < 0 ? undefined : slot;
  }

  async nonceInUse(nonce: number): Promise<boolean> {
    const { rowCount } = await this.pool.query({
      name: 'pg-nonce-in-use',
      text: 'SELECT 1 FROM issuances WHERE revocation_nonce = $1',
      values: [nonce],
    });
    return rowCount === 1;
  }

  /**
   * A hosted issuance asks for a live duplicate and, when there is none, for a status slot right
   * after. The lookups of one turn of the event loop (requests arriving together) go in one round
   * trip, with as many slots, kept for the next proposeStatusSlot calls of the same partition
   * shape: any free slot will do for any issuance (the insert's unique constraint still decides).
   */
  async findLiveDuplicate(q: DuplicateQuery): Promise<IssuanceRecord | undefined> {
    const found = await new Promise<string | undefined>((resolve, reject) => {
      if (this.lookups.push({ q, resolve, reject }) === 1) setImmediate(() => void this.flushLookups());
    });
    return found === undefined ? undefined : this.get(found);
  }

  private async flushLookups(): Promise<void> {
    const batch = this.lookups;
    this.lookups = [];
    const shape = this.proposals.length < PROPOSALS_KEPT ? this.shape : undefined;
    try {
      const { rows } = await this.pool.query<{
        o: number | null;
        duplicate: string | null;
        partition: number | null;
        free: number | null;
      }>({
        name: 'pg-live-duplicates-and-proposals',
        text: DUPLICATES_AND_PROPOSALS_SQL,
        values: [
          batch.map((l) => l.q.holderDid),
          batch.map((l) => l.q.schemaId),
          batch.map((l) => l.q.proofType),
          batch.map((l) => l.q.subjectHash),
          batch.map((l) => l.q.now),
          shape?.size ?? null,
          shape?.bits ?? null,
          shape ? randomCandidates(shape.size, RANDOM_PROBES + batch.length) : [],
          batch.length,
        ],
      });
      const duplicates = new Map<number, string>();
      const at = Date.now();
      for (const r of rows) {
        if (r.o !== null && r.duplicate !== null) duplicates.set(r.o, r.duplicate);
        else if (shape && r.partition !== null && r.free !== null)
          this.proposals.push({ ...shape, slot: { partition: r.partition, index: r.free }, at });
      }
      for (const [i, l] of batch.entries()) l.resolve(duplicates.get(i + 1));
    } catch (err) {
      for (const l of batch) l.reject(err);
    }
  }

  /**
   * Resolves once committed. The records and "uploaded" marks asked for in one turn of the event
   * loop (concurrent requests) are written together, in one transaction (flushWrites): a refused
   * or failing record rolls back alone, and nothing resolves before the commit.
   */
  async insertIssuance(
    n: NewIssuance,
    options: { dedupe: boolean; audit?: AuditActor | undefined },
  ): Promise<InsertOutcome> {
    const digest = n.envelope ? envelopeSha256(n.envelope) : null;
    const { outcome, existing } = await new Promise<{
      outcome: InsertOutcome['kind'];
      existing: string | null;
    }>((resolve, reject) => {
      this.records.push({ n, digest, options, deadlocks: 0, resolve, reject });
      this.scheduleWrites();
    });
    if (outcome === 'inserted') return { kind: 'inserted', record: insertedRecord(n, digest) };
    if (outcome === 'duplicate') {
      // Issuances are never deleted: the row found a moment ago is still there.
      const record = await this.get(existing!);
      return { kind: 'duplicate', record: record! };
    }
    // A slot proposed ahead may be as stale as this one: the next proposals come fresh.
    if (outcome === 'slot-taken') this.proposals = [];
    return { kind: outcome };
  }

  private writesScheduled = false;
  /** The call under way: one at a time, and what arrives meanwhile waits for the next. */
  private writing: Promise<void> | undefined;

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
      ordered.map(({ r: { n, digest, options }, key }, i) => ({
        o: i + 1,
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
        lock_space: key === null ? null : LOCK_DEDUPE_NAMESPACE,
        lock_key: key,
        audit_actor: options.audit?.actor ?? null,
        audit_reason: options.audit?.reason ?? null,
        event_id: n.event?.id ?? null,
        event_type: n.event?.type ?? null,
        event_data: n.event?.data ?? null,
      })),
    );
    let rows: Array<{
      o: number;
      outcome: InsertOutcome['kind'] | null;
      existing: string | null;
      error_code: string | null;
      error_message: string | null;
    }>;
    try {
      ({ rows } = await this.pool.query({
        name: 'pg-record-issuances',
        text: RECORD_ISSUANCES_SQL,
        values: [
          json,
          marks.map((m) => m.credentialId),
          marks.map((m) => m.storagePath),
          marks.map((m) => m.at),
        ],
      }));
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

  async get(credentialId: string): Promise<IssuanceRecord | undefined> {
    const { rows } = await this.pool.query<IssuanceRow>({
      name: 'pg-get-issuance',
      text: `${RECORD_SELECT} WHERE i.credential_id = $1`,
      values: [credentialId],
    });
    return rows[0] ? rowToIssuance(rows[0]) : undefined;
  }

  async getByNonce(nonce: number): Promise<IssuanceRecord | undefined> {
    const { rows } = await this.pool.query<IssuanceRow>({
      name: 'pg-get-by-nonce',
      text: `${RECORD_SELECT} WHERE i.revocation_nonce = $1`,
      values: [nonce],
    });
    return rows[0] ? rowToIssuance(rows[0]) : undefined;
  }

  async latestExpiryForKid(kid: string): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ t: Date | null }>(
      'SELECT MAX(expires_at) AS t FROM issuances WHERE kid = $1',
      [kid],
    );
    return rows[0]?.t ?? undefined;
  }

  async leaseDueUploads(now: Date, leaseMs: number, limit: number): Promise<IssuanceRecord[]> {
    // SKIP LOCKED: instances polling at once each take different rows instead of queueing. Due
    // uploads are found through issuance_envelopes_due (migration 023), their issuances by key.
    const { rows } = await this.pool.query<IssuanceRow>({
      name: 'pg-lease-due',
      text: OUTBOX_SQL.leaseDue,
      values: [now, new Date(now.getTime() + leaseMs), limit],
    });
    return rows
      .map(rowToIssuance)
      .sort((a, b) => (a.nextAttemptAt?.getTime() ?? 0) - (b.nextAttemptAt?.getTime() ?? 0));
  }

  async leaseUpload(credentialId: string, now: Date, leaseMs: number): Promise<boolean> {
    // A second instance racing for the same row waits for the first, then re-reads the row
    // (READ COMMITTED) and finds the lease held: exactly one of them gets it.
    const { rowCount } = await this.pool.query({
      name: 'pg-lease-upload',
      text: `UPDATE issuances SET lease_until = $1 WHERE credential_id = $2 AND upload_state = 'pending'
        AND (lease_until IS NULL OR lease_until < $3)`,
      values: [new Date(now.getTime() + leaseMs), credentialId, now],
    });
    return rowCount === 1;
  }

  /**
   * Resolves once the mark is committed. Uploads finishing at about the same time (one per
   * concurrent request) share one UPDATE, in the same call and transaction as the records of the
   * same turn of the event loop (flushWrites).
   */
  markUploaded(credentialId: string, storagePath: string | null, at: Date): Promise<void> {
    return new Promise((resolve, reject) => {
      this.marks.push({ credentialId, storagePath, at, resolve, reject });
      this.scheduleWrites();
    });
  }

  async markUploadFailed(
    credentialId: string,
    error: string,
    nextAttemptAt: Date,
    giveUpAfter: number,
  ): Promise<{ attempts: number; gaveUp: boolean }> {
    const { rows } = await this.pool.query<{ attempts: number; state: string }>({
      name: 'pg-mark-upload-failed',
      // The give-up and its `credential.delivery_failed` event in one statement, and the
      // outbox's due time with it (migration 023: none once failed).
      text: `WITH f AS (UPDATE issuances SET last_error = $1, lease_until = NULL, upload_attempts = upload_attempts + 1,
          upload_state = CASE WHEN upload_attempts + 1 >= $4 THEN 'failed' ELSE 'pending' END,
          next_attempt_at = CASE WHEN upload_attempts + 1 >= $4 THEN NULL ELSE $2::timestamptz END
          WHERE credential_id = $3 AND upload_state = 'pending'
          RETURNING credential_id, upload_attempts AS attempts, upload_state AS state, last_error, next_attempt_at),
        due AS (UPDATE issuance_envelopes e SET due_at = f.next_attempt_at FROM f WHERE e.credential_id = $3),
        ev AS (${insertEventSql(
          "'evt_' || gen_random_uuid()",
          "'credential.delivery_failed'",
          "json_build_object('credentialId', credential_id, 'attempts', attempts, 'lastError', last_error)::text",
          'now()',
          "FROM f WHERE state = 'failed'",
        )})
        SELECT attempts, state FROM f`,
      values: [error, nextAttemptAt, credentialId, giveUpAfter],
    });
    return { attempts: rows[0]?.attempts ?? 0, gaveUp: rows[0]?.state === 'failed' };
  }

  async retryFailedUploads(credentialIds: string[] | 'all', now: Date): Promise<string[]> {
    // Failed uploads are read through issuances_upload_error_created (a failed upload has an error,
    // migration 023); each is due again in the outbox, its envelope's row kept since it failed.
    const { rows } = await this.pool.query<{ id: string }>(
      `WITH r AS (UPDATE issuances SET upload_state = 'pending', upload_attempts = 0, next_attempt_at = $1, lease_until = NULL
         WHERE last_error IS NOT NULL AND upload_state = 'failed'
           ${credentialIds === 'all' ? '' : 'AND credential_id = ANY($2::text[])'}
         RETURNING credential_id),
       due AS (INSERT INTO issuance_envelopes (credential_id, body, due_at) SELECT credential_id, NULL, $1 FROM r
         ON CONFLICT (credential_id) DO UPDATE SET due_at = excluded.due_at)
       SELECT credential_id AS id FROM r`,
      credentialIds === 'all' ? [now] : [now, credentialIds],
    );
    return rows.map((r) => r.id);
  }

  async repairUnseenUploads(now: Date): Promise<number> {
    // A version from before migration 023 requeues a failed upload on issuances alone (migration
    // 025): its envelope's row keeps due_at NULL, out of the outbox's reads. One page per call,
    // the next call going on after it, so that a large backlog of failed uploads is read a page
    // per sweep and a pending upload among them is found within a pass over it. The same
    // statement takes failed uploads such an instance gave up out of issuance_envelopes_due.
    const { rows } = await this.pool.query<{ seen: number; last: string | null; repaired: number }>({
      name: 'pg-repair-unseen',
      text: OUTBOX_SQL.repairUnseen,
      values: [now, this.unseenAfter, UNSEEN_PAGE, STALE_HEAD],
    });
    const page = rows[0];
    this.unseenAfter = page && page.seen === UNSEEN_PAGE && page.last !== null ? page.last : '';
    return page?.repaired ?? 0;
  }

  async countFailedUploads(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(OUTBOX_SQL.countFailed);
    return rows[0]?.n ?? 0;
  }

  async makePendingDue(now: Date): Promise<void> {
    // Unlike SQLite (one process), a lease that has not expired may be a live instance's: it is
    // kept, and taken over only once it expires.
    await this.pool.query(
      `WITH due AS (UPDATE issuance_envelopes SET due_at = LEAST(due_at, $1) WHERE due_at IS NOT NULL
         RETURNING credential_id)
       UPDATE issuances i SET next_attempt_at = LEAST(next_attempt_at, $1),
         lease_until = CASE WHEN lease_until < $1 THEN NULL ELSE lease_until END
       FROM due WHERE i.credential_id = due.credential_id AND i.upload_state = 'pending'`,
      [now],
    );
  }

  async nextUploadDue(): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ t: Date | null }>(OUTBOX_SQL.nextDue);
    return rows[0]?.t ?? undefined;
  }

  async countPendingUploads(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(OUTBOX_SQL.countPending);
    return rows[0]?.n ?? 0;
  }

  async oldestPendingUpload(): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ t: Date | null }>(OUTBOX_SQL.oldestPending);
    return rows[0]?.t ?? undefined;
  }
}
