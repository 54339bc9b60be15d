import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { auditStatements as pgAudit } from '../../src/store/postgres/postgres-audit-store.js';
import { historyStatements as pgHistory } from '../../src/store/postgres/postgres-history-store.js';
import { OUTBOX_SQL, STALE_HEAD, UNSEEN_PAGE } from '../../src/store/postgres/postgres-outbox-sql.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import { auditStatements as sqliteAudit } from '../../src/store/sqlite/sqlite-audit-store.js';
import { historyStatements as sqliteHistory } from '../../src/store/sqlite/sqlite-history-store.js';
import type { AuditQuery, HistoryQuery } from '../../src/store/store.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

/**
 * Every admin history and audit filter, alone, combined and after a cursor, is read through an
 * index in sort order (docs/interface.md "Paging"): the plans of the statements the stores run.
 */
type Filters = Partial<Omit<HistoryQuery, 'limit' | 'order' | 'now' | 'after' | 'page'>>;
/**
 * Each filter alone, with the index that must drive it on each engine. PostgreSQL may read a
 * filter matching a fifth of the table through issuances_created, filtering as it goes: also an
 * ordered, bounded read.
 */
const SINGLE: Array<[Filters, { sqlite: string; postgres: string[] }]> = [
  [{}, { sqlite: 'issuances_created', postgres: ['issuances_created'] }],
  [{ status: 'valid' }, { sqlite: 'issuances_created', postgres: ['issuances_created'] }],
  [{ status: 'expired' }, { sqlite: 'issuances_created', postgres: ['issuances_created'] }],
  [{ status: 'revoked' }, { sqlite: 'issuances_revoked_created', postgres: ['issuances_revoked_created'] }],
  [
    { status: 'suspended' },
    { sqlite: 'issuances_suspended_expires', postgres: ['issuances_suspended_expires'] },
  ],
  [{ status: 'upload_pending' }, { sqlite: 'issuances_created', postgres: ['issuances_created'] }],
  [
    { status: 'upload_failed' },
    { sqlite: 'issuances_upload_failed', postgres: ['issuances_upload_error_created'] },
  ],
  [
    { holderDid: 'did:example:h7' },
    { sqlite: 'issuances_holder_created', postgres: ['issuances_holder_created_seq'] },
  ],
  [
    { schemaId: 'kyc-v1' },
    { sqlite: 'issuances_schema_created', postgres: ['issuances_schema_created_seq', 'issuances_created'] },
  ],
  [{ proofType: 'BJJ_SIG_2021' }, { sqlite: 'issuances_bjj_created', postgres: ['issuances_bjj_created'] }],
  [{ proofType: 'SD_JWT_VC' }, { sqlite: 'issuances_created', postgres: ['issuances_created'] }],
  [{ emailHash: 'hash-3' }, { sqlite: 'issuances_email_created', postgres: ['issuances_email_created_seq'] }],
  [
    { revocationNonce: 42 },
    { sqlite: 'sqlite_autoindex_issuances', postgres: ['issuances_revocation_nonce_key'] },
  ],
];
const COMBINED: Filters[] = [
  { schemaId: 'kyc-v1', status: 'revoked' },
  { holderDid: 'did:example:h7', status: 'valid' },
  { emailHash: 'hash-3', status: 'revoked' },
  { proofType: 'SD_JWT_VC', status: 'expired' },
  { schemaId: 'membership-v1', proofType: 'BJJ_SIG_2021' },
  { holderDid: 'did:example:h7', schemaId: 'kyc-v1', status: 'suspended' },
  { status: 'upload_pending', schemaId: 'kyc-v1' },
];
// The seeded PostgreSQL rows are one an hour from 2030-01-01: a cursor in the middle of them.
const NOW = new Date('2031-09-15T00:00:00Z');
const AFTER = { createdAt: new Date('2031-02-21T16:00:00Z'), id: 10_000 };

/** Every filter set × with and without a cursor × both orders. */
function* queries(): Generator<[string, HistoryQuery, string | undefined]> {
  for (const [filters, index] of [
    ...SINGLE,
    ...COMBINED.map((f) => [f, undefined] as [Filters, undefined]),
  ]) {
    for (const after of [undefined, AFTER]) {
      for (const order of ['createdAt_desc', 'createdAt_asc'] as const) {
        const label = `${JSON.stringify(filters)} ${order}${after ? ' after a cursor' : ''}`;
        yield [
          label,
          { ...filters, limit: 25, order, now: NOW, after },
          index ? JSON.stringify(index) : undefined,
        ];
      }
    }
  }
}
const AUDIT: Array<Omit<AuditQuery, 'limit'>> = [
  {},
  { actor: 'ops' },
  { action: 'revoke' },
  { actor: 'ops', action: 'revoke' },
  { actor: 'ops', after: 10 },
  { actor: 'ops', action: 'revoke', after: 10 },
];

describe('history and audit query plans: SQLite', () => {
  let store: SqliteStore;
  beforeAll(() => {
    store = openSqliteStore(':memory:');
  });
  afterAll(() => store.close());
  const plan = (sql: string, params: Record<string, unknown>) =>
    store.db
      .prepare<Record<string, unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(params)
      .map((r) => r.detail);

  it.each([...queries()])('%s', (_, q, index) => {
    const { page, scanEnd } = sqliteHistory(q);
    for (const s of [page, scanEnd]) {
      if (!s) continue;
      const steps = plan(s.sql, s.params);
      // A table read is through an index, or by rowid for a row a page keeps (`i`); the order is
      // the index's, never a sort of every match: only on the suspended index, which holds
      // expires_at after created_at (SQLite migration 020), the rows of one created_at are sorted by rowid.
      for (const step of steps.filter((d) => /\bissuances\b/.test(d))) expect(step).toMatch(/USING .*INDEX/);
      for (const step of steps.filter((d) => /^SEARCH i\b/.test(d)))
        expect(step).toMatch(/USING INTEGER PRIMARY KEY \(rowid=\?\)/);
      const joined = steps.join('\n');
      const tiesSorted = joined.includes('issuances_suspended_expires')
        ? joined.replaceAll('USE TEMP B-TREE FOR LAST TERM OF ORDER BY', '')
        : joined;
      expect(tiesSorted).not.toMatch(/TEMP B-TREE/);
      if (index) expect(steps.join('\n')).toContain(JSON.parse(index).sqlite);
    }
  });

  it.each(AUDIT)('audit %o', (q) => {
    const { page, scanEnd } = sqliteAudit({ ...q, limit: 25 });
    for (const s of [page, scanEnd]) {
      if (!s) continue;
      const steps = plan(s.sql, s.params).join('\n');
      expect(steps).not.toMatch(/TEMP B-TREE/);
      // The rowid itself is the key of the unfiltered read (`id` is the INTEGER PRIMARY KEY).
      if (q.actor) expect(steps).toContain('audit_log_actor');
      else if (q.action) expect(steps).toContain('audit_log_action');
    }
  });
});

const pgAvailable = await postgresAvailable('PostgreSQL query plans');

/**
 * PostgreSQL plans by cost, and on a near-empty table a sequential scan is cheapest whatever the
 * indexes: the table is seeded with a few thousand rows shaped like production ones (few revoked,
 * suspended, failed or pending; many holders) and analysed, and `enable_seqscan = off` makes any
 * sequential scan left in a plan mean that no index can serve the query.
 */
describe.skipIf(!pgAvailable)('history and audit query plans: PostgreSQL', () => {
  let db: TempDatabase;
  let store: PostgresStore;
  beforeAll(async () => {
    db = await createTempDatabase();
    store = await openPostgresStore(db.url, { poolMax: 1 });
    await store.pool.query(`
      INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
        subject_hash, kid, created_at, expires_at, status, envelope, upload_state, email_hash, last_error)
      SELECT 'c' || i, 'hosted', 'u' || i, 'did:example:h' || (i % 997), CASE WHEN i % 5 = 0 THEN 'kyc-v1' ELSE 'membership-v1' END,
        CASE WHEN i % 10 = 0 THEN 'BJJ_SIG_2021' ELSE 'SD_JWT_VC' END, i, 's' || i, 'kid-1',
        timestamptz '2030-01-01' + i * interval '1 hour', timestamptz '2030-01-01' + (i + 2000) * interval '1 hour',
        CASE WHEN i % 97 = 0 THEN 1 WHEN i % 89 = 0 THEN 2 ELSE 0 END, '{}',
        CASE WHEN i > 19990 THEN 'pending' WHEN i % 83 = 0 THEN 'failed' ELSE 'uploaded' END,
        CASE WHEN i % 7 = 0 THEN 'hash-' || (i % 50) END,
        CASE WHEN i <= 19990 AND i % 83 = 0 THEN 'refused' END
      FROM generate_series(1, 20000) AS i`);
    // The outbox's rows (migration 023): a pending upload's envelope with its due time, a failed one's without.
    await store.pool.query(`
      INSERT INTO issuance_envelopes (credential_id, body, due_at)
      SELECT credential_id, '{}', CASE WHEN upload_state = 'pending' THEN created_at END FROM issuances WHERE upload_state IN ('pending', 'failed')`);
    await store.pool.query(`
      INSERT INTO audit_log (at, actor, action, target)
      SELECT timestamptz '2030-01-01' + i * interval '1 minute', CASE WHEN i % 3 = 0 THEN 'ops' ELSE 'admin' END,
        CASE WHEN i % 4 = 0 THEN 'revoke' ELSE 'issue' END, 't' || i
      FROM generate_series(1, 5000) AS i`);
    await store.pool.query('ANALYZE issuances');
    await store.pool.query('ANALYZE audit_log');
    await store.pool.query('ANALYZE issuance_envelopes');
    await store.pool.query('SET enable_seqscan = off');
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  interface PlanNode {
    'Node Type': string;
    'Relation Name'?: string;
    'Index Name'?: string;
    Plans?: PlanNode[];
  }
  const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
  const plan = async (text: string, values: unknown[]) => {
    const { rows } = await store.pool.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (FORMAT JSON) ${text}`,
      values,
    );
    return nodes(rows[0]!['QUERY PLAN'][0]!.Plan);
  };

  it.each([...queries()])('%s', async (_, q, index) => {
    const { page, scanEnd } = pgHistory(q);
    for (const s of [page, scanEnd]) {
      if (!s) continue;
      const steps = await plan(s.text, s.values);
      const reads = steps.filter((n) => n['Relation Name'] === 'issuances');
      expect(reads.length).toBeGreaterThan(0);
      for (const n of reads)
        expect(n['Node Type']).toMatch(/^(Index Scan|Index Only Scan|Bitmap Heap Scan)$/);
      const used = steps.map((n) => n['Index Name']).filter((n) => n !== undefined);
      const allowed: string[] = index ? JSON.parse(index).postgres : [];
      if (index) expect(used.filter((n) => allowed.includes(n))).not.toEqual([]);
      // An unfiltered read (or one filtered by time only) follows the index's order, never sorts
      // the table; a selective index's few matches may be sorted.
      if (allowed.includes('issuances_created') && allowed.length === 1) {
        expect(steps.filter((n) => n['Node Type'] === 'Sort')).toEqual([]);
      }
    }
  });

  // The outbox reads its rows through issuance_envelopes' due index and their issuances by key,
  // counts failed uploads through the partial index on errors, and looks for pending uploads
  // without a due time through the index of rows without one: never a scan of either table.
  it.each([
    ['leaseDue', [new Date('2040-01-01'), new Date('2040-01-02'), 10], 'issuance_envelopes_due'],
    ['nextDue', [], 'issuance_envelopes_due'],
    ['countPending', [], 'issuance_envelopes_due'],
    ['oldestPending', [], 'issuance_envelopes_due'],
    ['countFailed', [], 'issuances_upload_error_created'],
    // A page of the envelopes' rows without a due time (migration 025), never all of them.
    ['repairUnseen', [new Date('2040-01-01'), 'c100', UNSEEN_PAGE, STALE_HEAD], 'issuance_envelopes_undue'],
  ] as const)('outbox %s', async (name, values, index) => {
    const steps = await plan(OUTBOX_SQL[name], [...values]);
    const tables = ['issuances', 'issuance_envelopes'];
    for (const n of steps.filter((n) => tables.includes(n['Relation Name'] ?? '')))
      expect(n['Node Type']).toMatch(/^(Index Scan|Index Only Scan|Bitmap Heap Scan|ModifyTable)$/);
    expect(steps.map((n) => n['Index Name'])).toContain(index);
  });

  it.each(AUDIT)('audit %o', async (q) => {
    const { page, scanEnd } = pgAudit({ ...q, limit: 25 });
    for (const s of [page, scanEnd]) {
      if (!s) continue;
      const steps = await plan(s.text, s.values);
      for (const n of steps.filter((n) => n['Relation Name'] === 'audit_log')) {
        expect(n['Node Type']).toMatch(/^(Index Scan|Index Scan Backward|Index Only Scan)$/);
      }
      expect(steps.filter((n) => n['Node Type'] === 'Sort')).toEqual([]);
    }
  });
});

/**
 * The outbox sweep's repair (OUTBOX_SQL.repairUnseen;
 * docs/architecture.md "The outbox on PostgreSQL") reads one page of issuance_envelopes_undue and
 * the head of issuance_envelopes_due, whatever the backlog of failed uploads and whatever the
 * planner knows: run as the store runs it (a prepared statement, planned afresh and then
 * generically) on 20,000 failed uploads without a body, before any ANALYZE and after one, with
 * every planner method allowed, no step reads more than a page's rows, and none is a sequential
 * scan.
 */
describe.skipIf(!pgAvailable)('outbox repair query plan: PostgreSQL, a large failed backlog', () => {
  let db: TempDatabase;
  let client: pg.Client;
  // Every id sorts after the cursor '' and before 'z'; requeued ids sit inside the backlog.
  const requeued = ['c000200', 'c000300', 'c019999'];
  const stale = ['c020001', 'c020002'];
  beforeAll(async () => {
    db = await createTempDatabase();
    // Migrated as an instance does when it starts.
    await (await openPostgresStore(db.url, { poolMax: 1 })).close();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    // No autovacuum: "before ANALYZE" stays so while the test runs.
    await client.query(`
      ALTER TABLE issuances SET (autovacuum_enabled = false);
      ALTER TABLE issuance_envelopes SET (autovacuum_enabled = false);
      INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
        subject_hash, kid, created_at, expires_at, status, envelope, upload_state, last_error, next_attempt_at)
      SELECT 'c' || lpad(i::text, 6, '0'), 'hosted', 'u' || i, 'did:example:h' || i, 'membership-v1', 'SD_JWT_VC', i,
        's' || i, 'kid-1', timestamptz '2030-01-01' + i * interval '1 minute', timestamptz '2031-01-01', 0, '',
        CASE WHEN i <= 20000 THEN 'failed' ELSE 'pending' END, CASE WHEN i <= 20000 THEN 'refused' END,
        CASE WHEN i > 20000 THEN timestamptz '2030-01-01' + i * interval '1 second' END
      FROM generate_series(1, 20905) AS i;
      -- 20,000 failed uploads without a body or a due time, 905 pending and due.
      INSERT INTO issuance_envelopes (credential_id, body, due_at) SELECT credential_id, NULL, next_attempt_at FROM issuances;`);
    // Queued again by a version before migration 023 (its envelope's row keeps due_at NULL), and
    // given up by one (its row keeps its due time).
    await client.query(
      `UPDATE issuances SET upload_state = 'pending', last_error = NULL, next_attempt_at = timestamptz '2030-02-01'
       WHERE credential_id = ANY ($1)`,
      [requeued],
    );
    await client.query(
      `UPDATE issuances SET upload_state = 'failed', last_error = 'refused', next_attempt_at = NULL
       WHERE credential_id = ANY ($1)`,
      [stale],
    );
    await client.query(`PREPARE repair_unseen (timestamptz, text, int, int) AS ${OUTBOX_SQL.repairUnseen}`);
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  interface Node {
    'Node Type': string;
    'Relation Name'?: string;
    'Index Name'?: string;
    'Actual Rows': number;
    'Actual Loops': number;
    'Rows Removed by Filter'?: number;
    'Rows Removed by Index Recheck'?: number;
    Plans?: Node[];
  }
  const nodes = (n: Node): Node[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
  /** Runs the repair from `after` and undoes it: its plan, and what it answered. */
  const run = async (after: string) => {
    await client.query('BEGIN');
    try {
      const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: Node }> }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE repair_unseen ('2030-03-01T00:00:00Z', '${after}', ${UNSEEN_PAGE}, ${STALE_HEAD})`,
      );
      const steps = nodes(rows[0]!['QUERY PLAN'][0]!.Plan);
      const { rows: state } = await client.query<{ credential_id: string; due: boolean }>(
        'SELECT credential_id, due_at IS NOT NULL AS due FROM issuance_envelopes WHERE credential_id = ANY ($1) ORDER BY 1',
        [[...requeued, ...stale]],
      );
      return { steps, state };
    } finally {
      await client.query('ROLLBACK');
    }
  };
  /** Rows a step read over all its loops, counting those its filters dropped. */
  const read = (n: Node) =>
    (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) *
    n['Actual Loops'];

  const check = async (label: string) => {
    // From the start (the requeued c000200 and c000300 on its page) and from the last page's end.
    for (const [after, made] of [
      ['', ['c000200', 'c000300']],
      ['c019800', ['c019999']],
    ] as const) {
      const { steps, state } = await run(after);
      const tables = steps.filter((n) =>
        ['issuances', 'issuance_envelopes'].includes(n['Relation Name'] ?? ''),
      );
      expect(tables.length, label).toBeGreaterThan(0);
      expect(
        steps.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']),
        label,
      ).toEqual([]);
      // A page of 500 and a head of 50, each row looked up by key: a scan of the backlog reads 20,000.
      const over = steps.filter((n) => read(n) > UNSEEN_PAGE + STALE_HEAD);
      expect(
        over.map((n) => `${n['Node Type']} ${n['Index Name'] ?? n['Relation Name'] ?? ''}: ${read(n)}`),
        label,
      ).toEqual([]);
      expect(
        steps.map((n) => n['Index Name']),
        label,
      ).toContain('issuance_envelopes_undue');
      // What it did: the requeued uploads on this page made due, the stale ones out of the due index.
      expect(state, label).toEqual(
        [...requeued, ...stale].map((id) => ({
          credential_id: id,
          due: (made as readonly string[]).includes(id),
        })),
      );
    }
  };
  const repeatedly = async (label: string) => {
    // Past the five runs after which a prepared statement may keep a generic plan.
    for (let i = 1; i <= 7; i++) await check(`${label}, run ${i}`);
    await client.query('SET plan_cache_mode = force_generic_plan');
    try {
      await check(`${label}, generic plan`);
    } finally {
      await client.query('RESET plan_cache_mode');
    }
  };

  it('reads a page, never the backlog: before ANALYZE, after it, planned afresh and generically', async () => {
    const { rows } = await client.query<{ analysed: boolean }>(
      "SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL AS analysed FROM pg_stat_user_tables WHERE relname = 'issuance_envelopes'",
    );
    expect(rows).toEqual([{ analysed: false }]);
    await repeatedly('before ANALYZE');
    await client.query('ANALYZE issuances');
    await client.query('ANALYZE issuance_envelopes');
    await repeatedly('after ANALYZE');
  });
});
