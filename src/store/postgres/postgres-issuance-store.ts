import { createHash, randomInt } from 'node:crypto';
import { pickFreeSlot } from '../slot-allocation.js';
import type {
  AuditActor,
  InsertOutcome,
  IssuanceRecord,
  IssuanceStore,
  NewIssuance,
  StatusSlot,
} from '../store.js';
import { LOCK_DEDUPE_NAMESPACE, type PgPool, type Queryable, withTransaction } from './database.js';
import { insertAudit } from './postgres-audit-store.js';
import { type IssuanceRow, rowToIssuance } from './rows.js';

type DuplicateQuery = Parameters<IssuanceStore['findLiveDuplicate']>[0];

// Random candidates checked in one round trip before falling back to a scan of the partition
// (each is one index probe on the server: enough for a partition up to about 85% full).
const RANDOM_PROBES = 16;
// Counter rows per partition (see status_list_allocations): few enough to sum on every read.
export const ALLOCATION_SHARDS = 16;

const ISSUANCE_COLUMNS = `credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
  status_partition, status_index, subject_hash, kid, created_at, expires_at, envelope, upload_state, next_attempt_at,
  lease_until, email_hash`;

// The first open partition of today's size and bits (after a change of STATUS_LIST_BITS or
// STATUS_LIST_PARTITION_SIZE new credentials go to a new partition) and the first of the random
// candidates that no issuance holds there.
const PROPOSE_SQL = `SELECT p.partition, p.size,
    (SELECT c.i FROM unnest($3::int[]) WITH ORDINALITY AS c(i, o)
      WHERE NOT EXISTS (SELECT 1 FROM issuances WHERE status_partition = p.partition AND status_index = c.i)
      ORDER BY c.o LIMIT 1) AS free
  FROM status_list_partitions p WHERE p.size = $1 AND p.bits = $2 AND NOT p.is_full
  ORDER BY p.partition LIMIT 1`;

// One statement (atomic without a transaction): the issuance, only into an existing partition
// and below its size, and the partition's allocation counter. A taken credential id, nonce or
// slot makes it insert nothing (the unique constraints decide between racing instances), and so
// does, with dedupe, a live hosted issuance of the same holder, schema, proof type and claims.
function insertSql(slot: boolean, dedupe: boolean): string {
  // Parameters: $1 id … $7 nonce, then with a slot $8 partition, $9 index; then subject, kid,
  // created, expires, envelope, next attempt, the inserting request's lease (store.ts uploadDueAt),
  // the email hash and with a slot the counter shard.
  const p = slot ? 9 : 7;
  const arg = (i: number) => `$${p + i}`;
  const values = `$1, $2, $3, $4, $5, $6, $7::bigint, ${slot ? '$8::int, $9::int' : 'NULL::int, NULL::int'},
      ${arg(1)}, ${arg(2)}, ${arg(3)}::timestamptz, ${arg(4)}::timestamptz, ${arg(5)}, 'pending', ${arg(6)}::timestamptz,
      ${arg(7)}::timestamptz, ${arg(8)}::text`;
  const conditions = [
    ...(slot
      ? ['EXISTS (SELECT 1 FROM status_list_partitions p WHERE p.partition = $8::int AND $9::int < p.size)']
      : []),
    ...(dedupe
      ? [
          `NOT EXISTS (SELECT 1 FROM issuances d WHERE d.holder_did = $4 AND d.schema_id = $5 AND d.proof_type = $6
            AND d.subject_hash = ${arg(1)} AND d.channel = 'hosted' AND d.status = 0 AND d.expires_at > ${arg(3)}::timestamptz)`,
        ]
      : []),
  ];
  const insert = `INSERT INTO issuances (${ISSUANCE_COLUMNS})
    SELECT ${values} ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''}
    ON CONFLICT DO NOTHING`;
  if (!slot) return `${insert} RETURNING 1`;
  return `WITH ins AS (${insert} RETURNING status_partition)
    INSERT INTO status_list_allocations (partition, shard, allocated)
    SELECT status_partition, ${arg(9)}, 1 FROM ins
    ON CONFLICT (partition, shard) DO UPDATE SET allocated = status_list_allocations.allocated + 1
    RETURNING 1`;
}
const INSERT_SQL = {
  'pg-insert-issuance': insertSql(false, false),
  'pg-insert-issuance-dedupe': insertSql(false, true),
  'pg-insert-issuance-slot': insertSql(true, false),
  'pg-insert-issuance-slot-dedupe': insertSql(true, true),
};

const LIVE_DUPLICATE_WHERE = `holder_did = $1 AND schema_id = $2 AND proof_type = $3 AND subject_hash = $4
  AND channel = 'hosted' AND status = 0 AND expires_at > $5`;

/** Two identical hosted requests on two instances must not both sign: they take turns on this. */
function dedupeLockKey(n: NewIssuance): number {
  return createHash('sha256')
    .update(JSON.stringify([n.holderDid, n.schemaId, n.proofType, n.subjectHash]))
    .digest()
    .readInt32BE(0);
}

export class PostgresIssuanceStore implements IssuanceStore {
  constructor(private readonly pool: PgPool) {}

  async proposeStatusSlot(partitionSize: number, bits: 1 | 2): Promise<StatusSlot> {
    for (;;) {
      // draft-ietf-oauth-status-list §13.2 (herd privacy): indexes are drawn at random, never sequential.
      const candidates = Array.from({ length: RANDOM_PROBES }, () => randomInt(partitionSize));
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

  async findLiveDuplicate(q: DuplicateQuery): Promise<IssuanceRecord | undefined> {
    const { rows } = await this.pool.query<IssuanceRow>({
      name: 'pg-live-duplicate',
      text: `SELECT * FROM issuances WHERE ${LIVE_DUPLICATE_WHERE} ORDER BY created_at DESC, seq DESC LIMIT 1`,
      values: [q.holderDid, q.schemaId, q.proofType, q.subjectHash, q.now],
    });
    return rows[0] ? rowToIssuance(rows[0]) : undefined;
  }

  async insertIssuance(
    n: NewIssuance,
    options: { dedupe: boolean; audit?: AuditActor | undefined },
  ): Promise<InsertOutcome> {
    const { audit } = options;
    if (audit) {
      // The `issue` audit row commits with the insert (and only when it inserted).
      const begin = options.dedupe
        ? `BEGIN; SELECT pg_advisory_xact_lock(${LOCK_DEDUPE_NAMESPACE}, ${dedupeLockKey(n)})`
        : 'BEGIN';
      return withTransaction(
        this.pool,
        async (client) => {
          const outcome = await this.insertOrExplain(client, n, options.dedupe);
          if (outcome.kind === 'inserted')
            await insertAudit(client, { ...audit, at: n.createdAt, action: 'issue', target: n.credentialId });
          return outcome;
        },
        begin,
      );
    }
    if (!options.dedupe) return this.insertOrExplain(this.pool, n, false);
    // Two identical hosted requests on two instances take turns here, so the second one's insert
    // (a new statement, a new snapshot) sees the first one's issuance. BEGIN and the lock go in
    // one round trip; the lock ends with the transaction.
    const lock = `BEGIN; SELECT pg_advisory_xact_lock(${LOCK_DEDUPE_NAMESPACE}, ${dedupeLockKey(n)})`;
    return withTransaction(this.pool, (client) => this.insertOrExplain(client, n, true), lock);
  }

  /** Inserts; when nothing was inserted, says why (same id, live duplicate, nonce, else slot). */
  private async insertOrExplain(db: Queryable, n: NewIssuance, dedupe: boolean): Promise<InsertOutcome> {
    const nextAttemptAt = n.uploadDueAt ?? n.createdAt;
    const name = `pg-insert-issuance${n.statusSlot ? '-slot' : ''}${dedupe ? '-dedupe' : ''}` as const;
    const { rowCount } = await db.query({
      name,
      text: INSERT_SQL[name],
      values: [
        n.credentialId,
        n.channel,
        n.userId,
        n.holderDid,
        n.schemaId,
        n.proofType,
        n.revocationNonce,
        ...(n.statusSlot ? [n.statusSlot.partition, n.statusSlot.index] : []),
        n.subjectHash,
        n.kid,
        n.createdAt,
        n.expiresAt,
        JSON.stringify(n.envelope),
        nextAttemptAt,
        n.uploadDueAt ?? null,
        n.emailHash ?? null,
        ...(n.statusSlot ? [randomInt(ALLOCATION_SHARDS)] : []),
      ],
    });
    if (rowCount === 1) {
      // What was just written, without reading it back (and re-parsing the envelope).
      const { uploadDueAt: _, emailHash: __, ...issuance } = n;
      return {
        kind: 'inserted',
        record: {
          ...issuance,
          status: 0,
          revokedAt: null,
          suspendedAt: null,
          uploadState: 'pending',
          uploadAttempts: 0,
          nextAttemptAt,
          lastError: null,
          storagePath: null,
          uploadedAt: null,
        },
      };
    }
    // The same credential id (an Idempotency-Key's) recorded before, else a live hosted repeat.
    const found = await db.query<IssuanceRow>({
      name: 'pg-same-or-duplicate',
      text: `SELECT * FROM (
          (SELECT *, 0 AS pri FROM issuances WHERE credential_id = $6)
          UNION ALL
          (SELECT *, 1 AS pri FROM issuances WHERE $7 AND ${LIVE_DUPLICATE_WHERE} ORDER BY created_at DESC, seq DESC LIMIT 1)
        ) found ORDER BY pri LIMIT 1`,
      values: [n.holderDid, n.schemaId, n.proofType, n.subjectHash, n.createdAt, n.credentialId, dedupe],
    });
    if (found.rows[0]) return { kind: 'duplicate', record: rowToIssuance(found.rows[0]) };
    const nonce = await db.query('SELECT 1 FROM issuances WHERE revocation_nonce = $1', [n.revocationNonce]);
    if (nonce.rowCount === 1) return { kind: 'nonce-taken' };
    return { kind: 'slot-taken' };
  }

  async get(credentialId: string): Promise<IssuanceRecord | undefined> {
    const { rows } = await this.pool.query<IssuanceRow>({
      name: 'pg-get-issuance',
      text: 'SELECT * FROM issuances WHERE credential_id = $1',
      values: [credentialId],
    });
    return rows[0] ? rowToIssuance(rows[0]) : undefined;
  }

  async getByNonce(nonce: number): Promise<IssuanceRecord | undefined> {
    const { rows } = await this.pool.query<IssuanceRow>({
      name: 'pg-get-by-nonce',
      text: 'SELECT * FROM issuances WHERE revocation_nonce = $1',
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
    // SKIP LOCKED: instances polling at once each take different rows instead of queueing.
    const { rows } = await this.pool.query<IssuanceRow>({
      name: 'pg-lease-due',
      text: `UPDATE issuances i SET lease_until = $2
        FROM (SELECT credential_id FROM issuances
              WHERE upload_state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
              ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) due
        WHERE i.credential_id = due.credential_id
        RETURNING i.*`,
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

  async markUploaded(credentialId: string, storagePath: string | null, at: Date): Promise<void> {
    await this.pool.query({
      name: 'pg-mark-uploaded',
      text: `UPDATE issuances SET upload_state = 'uploaded', storage_path = $1, uploaded_at = $2, next_attempt_at = NULL,
        lease_until = NULL, last_error = NULL, upload_attempts = upload_attempts + 1 WHERE credential_id = $3`,
      values: [storagePath, at, credentialId],
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
      text: `UPDATE issuances SET last_error = $1, lease_until = NULL, upload_attempts = upload_attempts + 1,
        upload_state = CASE WHEN upload_attempts + 1 >= $4 THEN 'failed' ELSE 'pending' END,
        next_attempt_at = CASE WHEN upload_attempts + 1 >= $4 THEN NULL ELSE $2::timestamptz END
        WHERE credential_id = $3 AND upload_state = 'pending'
        RETURNING upload_attempts AS attempts, upload_state AS state`,
      values: [error, nextAttemptAt, credentialId, giveUpAfter],
    });
    return { attempts: rows[0]?.attempts ?? 0, gaveUp: rows[0]?.state === 'failed' };
  }

  async retryFailedUploads(credentialIds: string[] | 'all', now: Date): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `UPDATE issuances SET upload_state = 'pending', upload_attempts = 0, next_attempt_at = $1, lease_until = NULL
       WHERE upload_state = 'failed' ${credentialIds === 'all' ? '' : 'AND credential_id = ANY($2::text[])'}
       RETURNING credential_id AS id`,
      credentialIds === 'all' ? [now] : [now, credentialIds],
    );
    return rows.map((r) => r.id);
  }

  async countFailedUploads(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM issuances WHERE upload_state = 'failed'",
    );
    return rows[0]?.n ?? 0;
  }

  async makePendingDue(now: Date): Promise<void> {
    // Unlike SQLite (one process), a lease that has not expired may be a live instance's: it is
    // kept, and taken over only once it expires.
    await this.pool.query(
      `UPDATE issuances SET next_attempt_at = LEAST(next_attempt_at, $1),
         lease_until = CASE WHEN lease_until < $1 THEN NULL ELSE lease_until END
       WHERE upload_state = 'pending'`,
      [now],
    );
  }

  async nextUploadDue(): Promise<Date | undefined> {
    // A leased upload is not due before its lease ends (else the worker would spin on it).
    const { rows } = await this.pool.query<{ t: Date | null }>(
      "SELECT MIN(GREATEST(next_attempt_at, lease_until)) AS t FROM issuances WHERE upload_state = 'pending'",
    );
    return rows[0]?.t ?? undefined;
  }

  async countPendingUploads(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM issuances WHERE upload_state = 'pending'",
    );
    return rows[0]?.n ?? 0;
  }

  async oldestPendingUpload(): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ t: Date | null }>(
      "SELECT min(created_at) AS t FROM issuances WHERE upload_state = 'pending'",
    );
    return rows[0]?.t ?? undefined;
  }
}
