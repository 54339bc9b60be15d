import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { DUE_SQL as PG_DUE_SQL } from '../../src/store/postgres/postgres-renewal-store.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import { DUE_SQL as SQLITE_DUE_SQL } from '../../src/store/sqlite/sqlite-renewal-store.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

/**
 * The renewal sweep's read (docs/operations.md "Renewal") is one range of `renewals_due`, from
 * RENEWAL_FINISH_GRACE_DAYS before now to the end of the schema's window, in expiry order: the
 * expired history older than the grace is never read, however long it grows. The plans of the
 * statement the stores run.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// The seeded rows expire one an hour from 2030-01-01 (20,000 of them, about 2.3 years).
const NOW = new Date('2031-01-01T00:00:00Z');
const FINISH_SINCE = new Date(NOW.getTime() - 30 * DAY);
const UNTIL = new Date(NOW.getTime() + 30 * DAY);
const BATCH = 100;

describe('renewal due query plan: SQLite', () => {
  let store: SqliteStore;
  beforeAll(() => {
    store = openSqliteStore(':memory:');
  });
  afterAll(() => store.close());

  it('one range of renewals_due between finishSince and until, its issuances by key, no sort', () => {
    const steps = store.db
      .prepare<Record<string, unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${SQLITE_DUE_SQL}`)
      .all({
        schemaId: 'renewing-v1',
        finishSince: FINISH_SINCE.toISOString(),
        from: NOW.toISOString(),
        until: UNTIL.toISOString(),
        limit: BATCH,
      })
      .map((r) => r.detail);
    const joined = steps.join('\n');
    expect(joined).toContain(
      'SEARCH r USING INDEX renewals_due (schema_id=? AND expires_at>? AND expires_at<?)',
    );
    expect(joined).toContain('SEARCH i USING INDEX sqlite_autoindex_issuances_1 (credential_id=?)');
    expect(joined).toMatch(/SEARCH n USING (COVERING )?INDEX issuances_renewed_from \(renewed_from=\?\)/);
    expect(joined).not.toMatch(/\bSCAN\b/);
    expect(joined).not.toMatch(/TEMP B-TREE/);
  });
});

const pgAvailable = await postgresAvailable('PostgreSQL renewal query plan');

/**
 * Seeded with production-shaped rows and analysed: direct credentials, most of the expired ones
 * never renewed (no outcome), every 50th with a renewing credential recorded. The planner keeps
 * its own costs here: on a table this size it would hash every issuance's `renewed_from` (a read
 * of the whole table) for the EXISTS if the statement let it.
 */
describe.skipIf(!pgAvailable)('renewal due query plan: PostgreSQL', () => {
  let db: TempDatabase;
  let store: PostgresStore;
  beforeAll(async () => {
    db = await createMigratedDatabase();
    store = await openPostgresStore(db.url, { poolMax: 1 });
    await store.pool.query(`
      INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
        subject_hash, kid, created_at, expires_at, status, envelope, upload_state, renewed_from)
      SELECT 'c' || i, 'direct', 'u' || i, 'did:example:h' || (i % 997), 'renewing-v1', 'SD_JWT_VC', i, 's' || i,
        'kid-1', timestamptz '2029-01-01' + i * interval '1 hour', timestamptz '2030-01-01' + i * interval '1 hour',
        CASE WHEN i % 97 = 0 THEN 1 ELSE 0 END, '{}', 'uploaded', NULL
      FROM generate_series(1, 20000) AS i
      UNION ALL
      SELECT 'n' || i, 'direct', 'u' || i, 'did:example:h' || (i % 997), 'renewed-v1', 'SD_JWT_VC', 100000 + i,
        'sn' || i, 'kid-1', timestamptz '2029-01-01' + i * interval '1 hour',
        timestamptz '2031-01-01' + i * interval '1 hour', 0, '{}', 'uploaded', 'c' || i
      FROM generate_series(50, 20000, 50) AS i`);
    await store.pool.query(`
      INSERT INTO renewals (credential_id, schema_id, expires_at, outcome, renewed_by)
      SELECT credential_id, schema_id, expires_at,
        CASE WHEN credential_id LIKE 'c%' AND substr(credential_id, 2)::int % 150 = 0 THEN 'renewed' END,
        CASE WHEN credential_id LIKE 'c%' AND substr(credential_id, 2)::int % 150 = 0 THEN 'n' || substr(credential_id, 2) END
      FROM issuances`);
    await store.pool.query('ANALYZE issuances');
    await store.pool.query('ANALYZE renewals');
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  interface PlanNode {
    'Node Type': string;
    'Relation Name'?: string;
    'Index Name'?: string;
    'Index Cond'?: string;
    Filter?: string;
    'Join Filter'?: string;
    'Actual Rows'?: number;
    'Actual Loops'?: number;
    'Rows Removed by Filter'?: number;
    Plans?: PlanNode[];
  }
  const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
  const plan = async (limit: number, analyze: boolean) => {
    const { rows } = await store.pool.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (${analyze ? 'ANALYZE, ' : ''}FORMAT JSON) ${PG_DUE_SQL}`,
      ['renewing-v1', FINISH_SINCE, NOW, UNTIL, limit],
    );
    return nodes(rows[0]!['QUERY PLAN'][0]!.Plan);
  };
  const read = (n: PlanNode) => n['Actual Rows']! * n['Actual Loops']! + (n['Rows Removed by Filter'] ?? 0);
  const inRange = async () => {
    const { rows } = await store.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM renewals WHERE schema_id = 'renewing-v1' AND outcome IS NULL
         AND expires_at > $1 AND expires_at <= $2`,
      [FINISH_SINCE, UNTIL],
    );
    return Number(rows[0]!.n);
  };

  it('one range of renewals_due between finishSince and until, in its order; each issuance by key', async () => {
    const steps = await plan(BATCH, false);
    const renewals = steps.filter((n) => n['Relation Name'] === 'renewals');
    expect(renewals).toHaveLength(1);
    expect(renewals[0]).toMatchObject({ 'Node Type': 'Index Scan', 'Index Name': 'renewals_due' });
    const cond = renewals[0]!['Index Cond']!;
    expect(cond).toMatch(/expires_at > /);
    expect(cond).toMatch(/expires_at <= /);
    // The credential and its renewing one are each looked up by key for a row of the range: never
    // a hash of every issuance (a `hashed SubPlan`), never a walk of a whole index.
    const issuances = steps.filter((n) => n['Relation Name'] === 'issuances');
    expect(issuances.map((n) => n['Index Name']).sort()).toEqual([
      'issuances_pkey',
      'issuances_renewed_from',
    ]);
    for (const n of issuances) {
      expect(n['Node Type']).toMatch(/^(Index Scan|Index Only Scan)$/);
      expect(n['Index Cond']).toMatch(/= r\.credential_id\)/);
    }
    const filters = steps.flatMap((n) => [n.Filter ?? '', n['Join Filter'] ?? '']).join('\n');
    expect(filters).not.toContain('hashed');
    expect(steps.filter((n) => n['Node Type'] === 'Sort')).toEqual([]);
  });

  it('reads no row expired before finishSince, nor every issuance, however many there are', async () => {
    const range = await inRange();
    const { rows } = await store.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM renewals WHERE schema_id = 'renewing-v1' AND outcome IS NULL AND expires_at <= $1`,
      [FINISH_SINCE],
    );
    expect(Number(rows[0]!.n)).toBeGreaterThan(5 * range);
    // A batch: the range from finishSince, stopped at the batch's end.
    const batch = await plan(BATCH, true);
    for (const n of batch.filter((n) => ['renewals', 'issuances'].includes(n['Relation Name'] ?? '')))
      expect(read(n)).toBeLessThanOrEqual(range);
    // A limit above everything: the range ends at `until`.
    const all = await plan(1_000_000, true);
    const renewals = all.find((n) => n['Relation Name'] === 'renewals')!;
    expect(read(renewals)).toBeLessThanOrEqual(range);
    expect(read(renewals)).toBeGreaterThan(0);
  });
});
