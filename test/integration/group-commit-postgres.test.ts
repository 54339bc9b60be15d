import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import {
  DUPLICATES_AND_PROPOSALS_SQL,
  PROPOSE_SQL,
} from '../../src/store/postgres/postgres-slot-proposals.js';
import type { NewIssuance, StatusSlot } from '../../src/store/store.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const available = await postgresAvailable('the PostgreSQL group commit tests');

let nonce = 1;
function issuance(id: string, over: Partial<NewIssuance> = {}): NewIssuance {
  const createdAt = new Date();
  return {
    credentialId: id,
    channel: 'direct',
    userId: 'u',
    holderDid: `did:example:${id}`,
    schemaId: 'membership-v1',
    proofType: 'SD_JWT_VC',
    revocationNonce: nonce++,
    statusSlot: null,
    subjectHash: id,
    kid: 'k',
    createdAt,
    expiresAt: new Date(createdAt.getTime() + 86_400_000),
    envelope: {
      holderDid: `did:example:${id}`,
      schemaId: 'membership-v1',
      expiresAt: new Date(createdAt.getTime() + 86_400_000).toISOString(),
      data: 'ZGF0YQ==',
      iv: 'aXY=',
      authTag: 'dGFn',
      encryptedKey: 'a2V5',
      externalId: id,
    },
    ...over,
  };
}

// Group commit on PostgreSQL (docs/architecture.md "Group commit"), as test/unit/store/group-commit.test.ts
// proves it on SQLite: the records and "uploaded" marks of one event-loop turn in one transaction,
// each record in its own savepoint, nothing resolved before the commit. A trigger notes the
// top-level transaction id (txid_current()) of every write to issuances, and a second connection
// looks at what is committed.
describe.skipIf(!available)('PostgreSQL group commit (record_issuances)', () => {
  let db: TempDatabase;
  let store: PostgresStore;
  let other: pg.Pool;

  beforeAll(async () => {
    db = await createMigratedDatabase();
    store = await openPostgresStore(db.url, { poolMax: 4 });
    other = new pg.Pool({ connectionString: db.url, max: 2 });
    await other.query(`
      CREATE TABLE tx_seen (credential_id TEXT, op TEXT, txid BIGINT);
      CREATE FUNCTION note_tx() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO tx_seen VALUES (NEW.credential_id, TG_OP, txid_current()); RETURN NEW; END $$;
      CREATE TRIGGER note_tx AFTER INSERT OR UPDATE ON issuances FOR EACH ROW EXECUTE FUNCTION note_tx();
      -- An audit row for a 'boom' issuance fails: after its issuance row and allocation bump.
      CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.target LIKE 'boom%' THEN RAISE EXCEPTION 'not this one' USING ERRCODE = 'P0001'; END IF;
        RETURN NEW; END $$;
      CREATE TRIGGER boom AFTER INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION boom();
      -- A 'commitfail' issuance makes its transaction's COMMIT fail (a deferred constraint trigger).
      CREATE FUNCTION commit_fail() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.credential_id LIKE 'commitfail%' THEN RAISE EXCEPTION 'cannot commit' USING ERRCODE = '23514'; END IF;
        RETURN NULL; END $$;
      CREATE CONSTRAINT TRIGGER commit_fail AFTER INSERT ON issuances DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION commit_fail();
    `);
  });
  afterAll(async () => {
    await other?.end();
    await store?.close();
    await db?.drop();
  });

  const committed = async (ids: string[]) =>
    (
      await other.query<{ credential_id: string }>(
        'SELECT credential_id FROM issuances WHERE credential_id = ANY($1) ORDER BY credential_id',
        [ids],
      )
    ).rows.map((r) => r.credential_id);
  const txids = async (ids: string[]) =>
    (
      await other.query<{ txid: string }>('SELECT DISTINCT txid FROM tx_seen WHERE credential_id = ANY($1)', [
        ids,
      ])
    ).rows.map((r) => r.txid);

  it("commits one turn's records and marks in one transaction, and resolves each only once committed", async () => {
    const earlier = `earlier-${randomUUID()}`;
    await store.issuances.insertIssuance(issuance(earlier), { dedupe: false });
    const [earlierTx] = await txids([earlier]);
    const ids = ['a', 'b', 'c'].map((k) => `${k}-${randomUUID()}`);
    const seen: string[][] = [];
    const all = ids.map((id) =>
      store.issuances.insertIssuance(issuance(id), { dedupe: false }).then(async (o) => {
        // Every write of the turn is visible to another connection by the time any one resolves.
        seen.push(await committed([...ids]));
        return o.kind;
      }),
    );
    const mark = store.issuances.markUploaded(earlier, '/vcs/earlier', new Date());
    expect(await Promise.all(all)).toEqual(['inserted', 'inserted', 'inserted']);
    await mark;
    expect(seen).toEqual([[...ids].sort(), [...ids].sort(), [...ids].sort()]);
    const { rows } = await other.query('SELECT op, txid FROM tx_seen WHERE credential_id = ANY($1)', [
      [earlier, ...ids],
    ]);
    // The earlier record's own insert, then one transaction for the three records and its mark.
    const turn = rows.filter((r) => !(r.op === 'INSERT' && r.txid === earlierTx));
    expect(turn).toHaveLength(4);
    expect(new Set(turn.map((r) => r.txid)).size).toBe(1);
    const { rows: marked } = await other.query(
      'SELECT upload_state, storage_path FROM issuances WHERE credential_id = $1',
      [earlier],
    );
    expect(marked[0]).toEqual({ upload_state: 'uploaded', storage_path: '/vcs/earlier' });
  });

  it('a refused record and a failing one roll back alone; the others of their turn commit', async () => {
    const slot: StatusSlot = await store.issuances.proposeStatusSlot(4096, 1);
    const partitionCount = async () =>
      Number(
        (
          await other.query<{ n: string }>(
            'SELECT COALESCE(SUM(allocated), 0) AS n FROM status_list_allocations WHERE partition = $1',
            [slot.partition],
          )
        ).rows[0]!.n,
      );
    const before = await partitionCount();
    const other2: StatusSlot = { partition: slot.partition, index: (slot.index + 1) % 4096 };
    const n = nonce++;
    const ids = ['first', 'slot', 'nonce', 'boom', 'last'].map((k) => `${k}-${randomUUID()}`);
    const results = await Promise.allSettled([
      store.issuances.insertIssuance(issuance(ids[0]!, { statusSlot: slot, revocationNonce: n }), {
        dedupe: false,
      }),
      // Racing for the same slot, then for the same nonce, as two requests of one turn can.
      store.issuances.insertIssuance(issuance(ids[1]!, { statusSlot: slot }), { dedupe: false }),
      store.issuances.insertIssuance(issuance(ids[2]!, { statusSlot: other2, revocationNonce: n }), {
        dedupe: false,
      }),
      // Fails after its issuance row and its allocation bump: both must go with it.
      store.issuances.insertIssuance(
        issuance(ids[3]!, { statusSlot: { partition: slot.partition, index: (slot.index + 2) % 4096 } }),
        { dedupe: false, audit: { actor: 'admin', reason: 'test' } },
      ),
      store.issuances.insertIssuance(issuance(ids[4]!, { statusSlot: other2 }), { dedupe: false }),
    ]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.kind : 'rejected'))).toEqual([
      'inserted',
      'slot-taken',
      'nonce-taken',
      'rejected',
      'inserted',
    ]);
    const reason = (results[3] as PromiseRejectedResult).reason as { code: string; message: string };
    expect(reason.code).toBe('P0001');
    expect(reason.message).toBe('not this one');
    expect(await committed(ids)).toEqual([ids[0], ids[4]].sort());
    expect(await partitionCount()).toBe(before + 2);
    const audit = await other.query('SELECT 1 FROM audit_log WHERE target = $1', [ids[3]]);
    expect(audit.rowCount).toBe(0);
    expect(await txids(ids)).toHaveLength(1);
  });

  it('two identical hosted requests in one turn: one is recorded, the other finds it', async () => {
    const a = issuance(`dup-a-${randomUUID()}`, { channel: 'hosted', subjectHash: 'same' });
    const b = {
      ...issuance(`dup-b-${randomUUID()}`, { channel: 'hosted' }),
      holderDid: a.holderDid,
      subjectHash: 'same',
    };
    const [ra, rb] = await Promise.all([
      store.issuances.insertIssuance(a, { dedupe: true }),
      store.issuances.insertIssuance(b, { dedupe: true }),
    ]);
    expect([ra.kind, rb.kind].sort()).toEqual(['duplicate', 'inserted']);
    const inserted = ra.kind === 'inserted' ? ra : rb;
    const duplicate = ra.kind === 'duplicate' ? ra : rb;
    expect(duplicate.kind === 'duplicate' && duplicate.record.credentialId).toBe(
      inserted.kind === 'inserted' && inserted.record.credentialId,
    );
  });

  it('when the commit fails, every write of the turn rejects and none is kept', async () => {
    const earlier = `earlier-${randomUUID()}`;
    await store.issuances.insertIssuance(issuance(earlier), { dedupe: false });
    const ids = [`ok-${randomUUID()}`, `commitfail-${randomUUID()}`];
    const results = await Promise.allSettled([
      ...ids.map((id) => store.issuances.insertIssuance(issuance(id), { dedupe: false })),
      store.issuances.markUploaded(earlier, '/vcs/x', new Date()),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const r of results)
      expect(((r as PromiseRejectedResult).reason as Error).message).toBe('cannot commit');
    expect(await committed(ids)).toEqual([]);
    const { rows } = await other.query('SELECT upload_state FROM issuances WHERE credential_id = $1', [
      earlier,
    ]);
    expect(rows[0].upload_state).toBe('pending');
  });

  it('writes what is queued before the pool closes', async () => {
    const second = await openPostgresStore(db.url, { poolMax: 2, migrate: false });
    const id = `closing-${randomUUID()}`;
    const written = second.issuances.insertIssuance(issuance(id), { dedupe: false });
    await second.close();
    expect((await written).kind).toBe('inserted');
    expect(await committed([id])).toEqual([id]);
  });
});

// A slot proposal probes the slot index once per random candidate, whatever the plan cache does:
// a generic plan that turned the probes into an anti-join read every issuance of the partition
// (docs/benchmarks.md "As the data grows").
describe.skipIf(!available)('PostgreSQL slot proposals stay index probes', () => {
  let db: TempDatabase;
  let store: PostgresStore;
  beforeAll(async () => {
    db = await createMigratedDatabase();
    store = await openPostgresStore(db.url, { poolMax: 2 });
    // 2,000 issuances in one partition, the table's statistics still those of an empty table.
    const first = await store.issuances.proposeStatusSlot(4096, 1);
    await Promise.all(
      Array.from({ length: 2000 }, (_, i) =>
        store.issuances.insertIssuance(
          issuance(`plan-${i}-${randomUUID()}`, { statusSlot: { partition: first.partition, index: i } }),
          { dedupe: false },
        ),
      ),
    );
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  const plan = async (text: string, types: string, values: string) => {
    const client = await store.pool.connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE proposal(${types}) AS ${text}`);
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE proposal(${values})`);
      return JSON.stringify(rows[0]['QUERY PLAN']);
    } finally {
      await client.query('DEALLOCATE ALL');
      client.release();
    }
  };

  it.each([
    ['proposeStatusSlot', PROPOSE_SQL, 'int, smallint, int[]', "4096, 1, '{1,2,3}'"],
    [
      'findLiveDuplicate',
      DUPLICATES_AND_PROPOSALS_SQL,
      'text[], text[], text[], text[], timestamptz[], int, smallint, int[], int',
      "'{a}', '{s}', '{SD_JWT_VC}', '{h}', ARRAY[now()], 4096, 1, '{1,2,3}', 1",
    ],
  ])(
    '%s: one index probe per candidate slot, never a scan of the partition',
    async (_, text, types, values) => {
      const json = await plan(text, types, values);
      expect(json).toContain('"Index Name":"issuances_status_slot"');
      expect(json).toMatch(
        /"Index Cond":"\(\(status_partition = [a-z_]+\.partition\) AND \(status_index = c\.i\)\)"/,
      );
      expect(json).not.toContain('Bitmap Heap Scan');
    },
  );
});

// Migration 023: the dedupe index in lookup order wins also while the table is new and has no
// statistics, when the schema's history index looked as cheap: a plan cached then read every
// issuance of the schema on each lookup until autovacuum's first ANALYZE.
describe.skipIf(!available)('PostgreSQL live-duplicate lookups on a new table', () => {
  let db: TempDatabase;
  let store: PostgresStore;
  beforeAll(async () => {
    db = await createMigratedDatabase();
    store = await openPostgresStore(db.url, { poolMax: 1 });
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('findLiveDuplicate: the live duplicate through issuances_dedupe, never a schema scan', async () => {
    const client = await store.pool.connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(
        `PREPARE lookup(text[], text[], text[], text[], timestamptz[], int, smallint, int[], int) AS ${DUPLICATES_AND_PROPOSALS_SQL}`,
      );
      const { rows } = await client.query(
        "EXPLAIN (FORMAT JSON) EXECUTE lookup('{a}', '{s}', '{SD_JWT_VC}', '{h}', ARRAY[now()], 4096, 1, '{1,2,3}', 1)",
      );
      const json = JSON.stringify(rows[0]['QUERY PLAN']);
      expect(json).toContain('"Index Name":"issuances_dedupe"');
      expect(json).not.toContain('issuances_schema_created_seq');
    } finally {
      await client.query('DEALLOCATE ALL');
      client.release();
    }
  });
});
