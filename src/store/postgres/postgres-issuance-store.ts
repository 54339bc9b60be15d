import { credentialDeliveryFailedEvent } from '../../events/builders.js';
import { filledByDatabase } from '../../events/database-filled.js';
import { envelopeSha256, insertedRecord, RECORD_SELECT } from '../issuance-row.js';
import type {
  AuditActor,
  BatchInsertOutcome,
  InsertOutcome,
  IssuanceRecord,
  IssuanceStore,
  NewIssuance,
  StatusSlot,
} from '../store.js';
import type { PgPool } from './database.js';
import { PgIssuanceWrites, recordBatch } from './postgres-issuance-writes.js';
import { OUTBOX_SQL, STALE_HEAD, UNSEEN_PAGE } from './postgres-outbox-sql.js';
import { PgSlotProposals } from './postgres-slot-proposals.js';
import { insertEventSql } from './postgres-webhook-store.js';
import { type IssuanceRow, rowToIssuance } from './rows.js';

type DuplicateQuery = Parameters<IssuanceStore['findLiveDuplicate']>[0];

export class PostgresIssuanceStore implements IssuanceStore {
  private readonly slots: PgSlotProposals;
  private readonly writes: PgIssuanceWrites;
  /** Where the next repairUnseenUploads page of issuance_envelopes_undue starts ('' from the first row). */
  private unseenAfter = '';

  constructor(private readonly pool: PgPool) {
    this.slots = new PgSlotProposals(pool);
    this.writes = new PgIssuanceWrites(pool);
  }

  /** A random free slot, taken from those the last duplicate lookups proposed while they are fresh. */
  proposeStatusSlot(partitionSize: number, bits: 1 | 2): Promise<StatusSlot> {
    return this.slots.propose(partitionSize, bits);
  }

  async nonceInUse(nonce: number): Promise<boolean> {
    const { rowCount } = await this.pool.query({
      name: 'pg-nonce-in-use',
      text: 'SELECT 1 FROM issuances WHERE revocation_nonce = $1',
      values: [nonce],
    });
    return rowCount === 1;
  }

  /** Looked up with the other lookups of this turn of the event loop, in one round trip (PgSlotProposals). */
  async findLiveDuplicate(q: DuplicateQuery): Promise<IssuanceRecord | undefined> {
    const found = await this.slots.findDuplicate(q);
    return found === undefined ? undefined : this.get(found);
  }

  /**
   * Resolves once committed. The records and "uploaded" marks asked for in one turn of the event
   * loop (concurrent requests) are written together, in one transaction (PgIssuanceWrites): a refused
   * or failing record rolls back alone, and nothing resolves before the commit.
   */
  async insertIssuance(
    n: NewIssuance,
    options: { dedupe: boolean; audit?: AuditActor | undefined },
  ): Promise<InsertOutcome> {
    const digest = n.envelope ? envelopeSha256(n.envelope) : null;
    const { outcome, existing } = await this.writes.record(n, digest, options);
    if (outcome === 'inserted') return { kind: 'inserted', record: insertedRecord(n, digest) };
    if (outcome === 'duplicate') {
      // Issuances are never deleted: the row found a moment ago is still there.
      const record = await this.get(existing!);
      return { kind: 'duplicate', record: record! };
    }
    // A slot proposed ahead may be as stale as this one: the next proposals come fresh.
    if (outcome === 'slot-taken') this.slots.forget();
    return { kind: outcome };
  }

  /** A batch in one transaction of its own, outside the turn's group: all of it or none. */
  async insertIssuances(
    batch: readonly NewIssuance[],
    options: { audit?: AuditActor | undefined },
  ): Promise<BatchInsertOutcome> {
    const rows = batch.map((n) => ({ n, digest: n.envelope ? envelopeSha256(n.envelope) : null }));
    const outcome = await recordBatch(this.pool, rows, options);
    if (outcome === 'inserted')
      return { kind: 'inserted', records: rows.map(({ n, digest }) => insertedRecord(n, digest)) };
    if (outcome === 'slot-taken') this.slots.forget();
    return { kind: outcome };
  }

  /** Writes what is queued now and waits until it is written (before the pool closes). */
  drain(): Promise<void> {
    return this.writes.drain();
  }

  get(credentialId: string): Promise<IssuanceRecord | undefined> {
    return this.recordWhere('pg-get-issuance', 'i.credential_id', credentialId);
  }

  getByNonce(nonce: number): Promise<IssuanceRecord | undefined> {
    return this.recordWhere('pg-get-by-nonce', 'i.revocation_nonce', nonce);
  }

  /** The record whose unique `column` is `value`, by a prepared statement of that `name`. */
  private async recordWhere(
    name: string,
    column: 'i.credential_id' | 'i.revocation_nonce',
    value: string | number,
  ): Promise<IssuanceRecord | undefined> {
    const { rows } = await this.pool.query<IssuanceRow>({
      name,
      text: `${RECORD_SELECT} WHERE ${column} = $1`,
      values: [value],
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

  /** Resolves once committed, with the records of the same turn of the event loop (PgIssuanceWrites). */
  markUploaded(credentialId: string, storagePath: string | null, at: Date): Promise<void> {
    return this.writes.markUploaded(credentialId, storagePath, at);
  }

  async markUploadFailed(
    credentialId: string,
    error: string,
    nextAttemptAt: Date,
    giveUpAfter: number,
  ): Promise<{ attempts: number; gaveUp: boolean }> {
    // Its `attempts` is counted by the statement.
    const event = filledByDatabase(credentialDeliveryFailedEvent(credentialId, 0, error), 'attempts', 0);
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
        ev AS (${insertEventSql('$5::text', '$6::text', '$7::text || attempts::text || $8::text', 'now()', "FROM f WHERE state = 'failed'")})
        SELECT attempts, state FROM f`,
      values: [error, nextAttemptAt, credentialId, giveUpAfter, event.id, event.type, event.head, event.tail],
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
