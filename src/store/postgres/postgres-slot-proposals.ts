import { randomInt } from 'node:crypto';
import type { StatusSlot } from '../../model.js';
import type { IssuanceStore } from '../issuance-store.js';
import { pickFreeSlot } from '../slot-allocation.js';
import type { PgPool } from './database.js';
import { hotStatement } from './shared-calls.js';

type DuplicateQuery = Parameters<IssuanceStore['findLiveDuplicate']>[0];

// Random candidates checked in one round trip before falling back to a scan of the partition
// (each is one index probe on the server: enough for a partition up to about 85% full).
const RANDOM_PROBES = 16;

// Whether candidate slot c.i of partition p is taken: one probe of the slot's unique index per
// candidate. The LIMIT keeps the planner from turning the probes into an anti-join, which a cached
// generic plan reads as the whole partition's issuances (7.9 ms instead of 0.13 ms at 2,200 rows).
const slotTaken = (schema: string) => `LEFT JOIN LATERAL (SELECT 1 AS taken FROM ${schema}issuances
      WHERE status_partition = p.partition AND status_index = c.i LIMIT 1) t ON true`;
const SLOT_TAKEN = slotTaken('');

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
// `schema`: the tables' schema prefix (database.ts schemaPrefix), or none.
export const duplicatesAndProposalsSql = (schema: string) => `WITH q AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
      WITH ORDINALITY AS q(holder, schema, proof, subject, now, o)),
  p AS (SELECT partition FROM ${schema}status_list_partitions WHERE size = $6::int AND bits = $7::smallint AND NOT is_full
    ORDER BY partition LIMIT 1)
  SELECT q.o::int AS o, d.credential_id AS duplicate, NULL::int AS partition, NULL::int AS free
    FROM q CROSS JOIN LATERAL (SELECT credential_id FROM ${schema}issuances WHERE holder_did = q.holder AND schema_id = q.schema
      AND proof_type = q.proof AND subject_hash = q.subject AND channel = 'hosted' AND status = 0 AND expires_at > q.now
      ORDER BY created_at DESC, seq DESC LIMIT 1) d
  UNION ALL
  (SELECT NULL, NULL, p.partition, c.i FROM p CROSS JOIN unnest($8::int[]) WITH ORDINALITY AS c(i, o) ${slotTaken(schema)}
    WHERE t.taken IS NULL ORDER BY c.o LIMIT $9)`;
export const DUPLICATES_AND_PROPOSALS_SQL = duplicatesAndProposalsSql('');

/** A row of the lookup: a duplicate of lookup `o`, or a free slot proposed. */
interface LookupRow {
  o: number | null;
  duplicate: string | null;
  partition: number | null;
  free: number | null;
}

interface DuplicateLookup {
  q: DuplicateQuery;
  resolve(credentialId: string | undefined): void;
  reject(err: unknown): void;
}

// A slot proposed ahead of its proposeStatusSlot is handed out this fresh at most; with this many
// waiting no more are proposed (a hosted issuance with no status list asks for none).
const PROPOSAL_MAX_AGE_MS = 1000;
const PROPOSALS_KEPT = 64;

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

/**
 * The status slots and live-duplicate lookups of PostgresIssuanceStore: a hosted issuance's
 * duplicate lookup proposes slots ahead, in the same round trip, for the next `propose` calls.
 */
export class PgSlotProposals {
  /** Slots proposed by findLiveDuplicate, oldest first. */
  private proposals: Proposal[] = [];
  /** The partition size and bits last asked for: what findLiveDuplicate proposes a slot in. */
  private shape: { size: number; bits: 1 | 2 } | undefined;
  /** findLiveDuplicate calls waiting for this turn of the event loop's one query. */
  private lookups: DuplicateLookup[] = [];

  /** This turn's lookups in one statement (shared-calls.ts hotStatement). */
  private readonly lookup: (values: unknown[]) => Promise<LookupRow[]>;

  constructor(private readonly pool: PgPool) {
    this.lookup = hotStatement(
      pool,
      'live_duplicates',
      'pg-live-duplicates-and-proposals',
      duplicatesAndProposalsSql,
    );
  }

  async propose(partitionSize: number, bits: 1 | 2): Promise<StatusSlot> {
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

  /**
   * A hosted issuance asks for a live duplicate and, when there is none, for a status slot right
   * after. The lookups of one turn of the event loop (requests arriving together) go in one round
   * trip, with as many slots, kept for the next `propose` calls of the same partition
   * shape: any free slot will do for any issuance (the insert's unique constraint still decides).
   */
  findDuplicate(q: DuplicateQuery): Promise<string | undefined> {
    return new Promise<string | undefined>((resolve, reject) => {
      if (this.lookups.push({ q, resolve, reject }) === 1) setImmediate(() => void this.flushLookups());
    });
  }

  private async flushLookups(): Promise<void> {
    const batch = this.lookups;
    this.lookups = [];
    const shape = this.proposals.length < PROPOSALS_KEPT ? this.shape : undefined;
    try {
      const values = [
        batch.map((l) => l.q.holderDid),
        batch.map((l) => l.q.schemaId),
        batch.map((l) => l.q.proofType),
        batch.map((l) => l.q.subjectHash),
        batch.map((l) => l.q.now),
        shape?.size ?? null,
        shape?.bits ?? null,
        shape ? randomCandidates(shape.size, RANDOM_PROBES + batch.length) : [],
        batch.length,
      ];
      const rows = await this.lookup(values);
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

  /** A slot proposed ahead may be as stale as one refused: the next proposals come fresh. */
  forget(): void {
    this.proposals = [];
  }
}
