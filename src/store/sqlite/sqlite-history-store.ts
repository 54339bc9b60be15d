import type { ProofType } from '../../model.js';
import {
  type FilterTerm,
  proofFilterSql,
  SCAN_LIMIT,
  type SqliteStatement,
  splitFilters,
  statusFilterSql,
} from '../keyset.js';
import { mergeLinks } from '../renewal-store.js';
import type {
  HistoryCursor,
  HistoryPage,
  HistoryQuery,
  HistoryStatusFilter,
  HourlyIssuances,
  IssuanceHistoryStore,
  IssuanceSummary,
  RenewalLinks,
} from '../store.js';
import type { SqliteDatabase } from './database.js';
import { readKeysetPage } from './keyset-read.js';
import { rowToSummary, type SummaryRow } from './sqlite-issuance-rows.js';
import type { SqliteReader } from './sqlite-reader.js';

// Never `claims`, `subject_hash` or `envelope`: history shows metadata only.
const COLUMNS = `credential_id, channel, holder_did, schema_id, proof_type, revocation_nonce, status_partition, status_index,
  kid, created_at, expires_at, status, revoked_at, upload_state, storage_path`;
const KEPT_COLUMNS = COLUMNS.split(',')
  .map((c) => `i.${c.trim()}`)
  .join(', ');

/**
 * Each status filter as the part an index answers in created_at order (a partial index of
 * migrations 008 and 009: the query must name the index's own WHERE term for SQLite to use it)
 * and the part checked on the rows it yields. Dates are stored as toISOString() text, so text
 * comparison is time order.
 */
const STATUS_SQL = statusFilterSql('@now');

/** A filter term, and the index that must drive it when it drives the read. */
type SqliteTerm = FilterTerm & { index?: string };

/**
 * issuances_suspended_expires (migration 020) holds expires_at after created_at, so the planner
 * would rather walk issuances_created, whose order needs no sort of created_at ties: named, it
 * yields the suspended rows in created_at order, sorting only the rows of one instant by rowid.
 */
const STATUS_INDEX: Partial<Record<HistoryStatusFilter, string>> = {
  suspended: 'issuances_suspended_expires',
};

type Params = Record<string, string | number>;

/**
 * The statements of one history read, exported for the query-plan tests: `page` (limit + 1 rows),
 * `scanEnd` (where a bounded read stopped; only when some filter is checked row by row) and
 * `count`.
 */
export function historyStatements(q: HistoryQuery): {
  page: SqliteStatement;
  scanEnd?: SqliteStatement | undefined;
  count: SqliteStatement;
} {
  const params: Params = { now: q.now.toISOString(), limit: q.limit + 1 };
  // Most selective first: the first one an index answers drives the read.
  const terms: SqliteTerm[] = [];
  const add = (column: string, name: string, value: string | number | undefined) => {
    if (value === undefined) return;
    params[name] = value;
    terms.push({ sql: `${column} = @${name}`, drives: true, reads: [column] });
  };
  add('revocation_nonce', 'nonce', q.revocationNonce);
  add('holder_did', 'holderDid', q.holderDid);
  add('email_hash', 'emailHash', q.emailHash);
  add('batch_id', 'batchId', q.batchId);
  const status = q.status === undefined ? undefined : STATUS_SQL[q.status];
  if (status?.indexed) {
    const index = q.status === undefined ? undefined : STATUS_INDEX[q.status];
    terms.push({ sql: status.indexed, drives: true, reads: status.reads, ...(index ? { index } : {}) });
  }
  add('schema_id', 'schemaId', q.schemaId);
  // A date range alone is read through issuances_created; beside another filter it is checked.
  const range: string[] = [];
  if (q.createdFrom !== undefined) {
    params.createdFrom = q.createdFrom.toISOString();
    range.push('created_at >= @createdFrom');
  }
  if (q.createdTo !== undefined) {
    params.createdTo = q.createdTo.toISOString();
    range.push('created_at < @createdTo');
  }
  if (range.length > 0) terms.push({ sql: range.join(' AND '), drives: true, reads: ['created_at'] });
  if (q.channel !== undefined) {
    params.channel = q.channel;
    terms.push({ sql: 'channel = @channel', drives: false, reads: ['channel'] });
  }
  if (q.proofType !== undefined) terms.push(proofFilterSql(q.proofType));
  if (status?.rest) terms.push({ sql: status.rest, drives: false, reads: status.reads });
  const where = (conds: string[]) => (conds.length > 0 ? `WHERE ${conds.join(' AND ')}` : '');
  const { driver, drive, rest, reads } = splitFilters(terms);
  const table = driver?.index ? `issuances INDEXED BY ${driver.index}` : 'issuances';
  const count = { sql: `SELECT COUNT(*) AS n FROM ${table} ${where(terms.map((t) => t.sql))}`, params };

  // rowid breaks created_at ties: pages must be stable.
  const dir = q.order === 'createdAt_asc' ? 'ASC' : 'DESC';
  const order = `ORDER BY created_at ${dir}, rowid ${dir}`;
  if (q.page !== undefined) {
    params.offset = (q.page - 1) * q.limit;
    const sql = `SELECT rowid AS row_key, ${COLUMNS} FROM ${table} ${where(terms.map((t) => t.sql))} ${order}
      LIMIT @limit OFFSET @offset`;
    return { page: { sql, params }, count };
  }

  if (q.after) {
    const cmp = dir === 'ASC' ? '>' : '<';
    params.afterAt = q.after.createdAt.toISOString();
    params.afterId = q.after.id;
    // The range on created_at is what the index seeks to; the rest settles ties.
    drive.push(`created_at ${cmp}= @afterAt AND (created_at ${cmp} @afterAt OR rowid ${cmp} @afterId)`);
  }
  if (rest.length === 0) {
    const sql = `SELECT rowid AS row_key, ${COLUMNS} FROM ${table} ${where(drive)} ${order} LIMIT @limit`;
    return { page: { sql, params }, count };
  }
  params.scan = SCAN_LIMIT;
  // A subquery with LIMIT is never flattened: the filter sees at most SCAN_LIMIT rows of the
  // driving index. Each is read as a coroutine, in its own order, and stops once the next LIMIT is
  // reached. The bounded read takes only the key and the columns the filter reads, so where the
  // driving index holds them it reads no table row; the page's rows are read by rowid once kept.
  const scanned = ['rowid AS row_key', 'created_at', ...reads.filter((c) => c !== 'created_at')];
  const sql = `SELECT kept.row_key, ${KEPT_COLUMNS} FROM (SELECT row_key, created_at FROM (SELECT ${scanned.join(', ')}
      FROM ${table} ${where(drive)} ${order} LIMIT @scan) ${where(rest)} ORDER BY created_at ${dir}, row_key ${dir}
      LIMIT @limit) AS kept JOIN issuances AS i ON i.rowid = kept.row_key ORDER BY kept.created_at ${dir}, kept.row_key ${dir}`;
  const scanEnd = {
    sql: `SELECT created_at, rowid AS row_key FROM ${table} ${where(drive)} ${order} LIMIT 1 OFFSET @scan - 1`,
    params,
  };
  return { page: { sql, params }, scanEnd, count };
}

type KeyedRow = SummaryRow & { row_key: number };
const keyOf = (r: { created_at: string; row_key: number }): HistoryCursor => ({
  createdAt: new Date(r.created_at),
  id: r.row_key,
});

/** `GET /admin/issuance-history` (docs/interface.md) over the issuances table. */
export class SqliteHistoryStore implements IssuanceHistoryStore {
  private readonly active;
  private readonly perHour;

  constructor(
    private readonly db: SqliteDatabase,
    /** Where the reads that look at every matching row run (a file database's); else this thread. */
    private readonly reader?: SqliteReader,
  ) {
    this.active = db.prepare<[string, string, string, string], SummaryRow>(
      `SELECT ${COLUMNS} FROM issuances WHERE holder_did = ? AND schema_id = ? AND proof_type = ? AND status != 1 AND expires_at > ?
       ORDER BY created_at DESC, rowid DESC`,
    );
    this.perHour = db.prepare<[string], { hour: string; channel: string; proof_type: string; n: number }>(
      `SELECT substr(created_at, 1, 13) AS hour, channel, proof_type, COUNT(*) AS n FROM issuances
         WHERE created_at >= ? GROUP BY hour, channel, proof_type ORDER BY hour`,
    );
  }

  async list(q: HistoryQuery): Promise<HistoryPage> {
    return readKeysetPage<KeyedRow, { created_at: string; row_key: number }, HistoryCursor, IssuanceSummary>(
      this.db,
      this.reader,
      historyStatements(q),
      q,
      { key: keyOf, endKey: keyOf, record: rowToSummary },
    );
  }

  async renewalLinks(credentialIds: string[]): Promise<Map<string, RenewalLinks>> {
    if (credentialIds.length === 0) return new Map();
    const ids = JSON.stringify(credentialIds);
    // Both directions through indexes: the primary key, and issuances_renewed_from.
    const rows = this.db
      .prepare<[string, string], { id: string; renewed_from: string | null; renewed_by: string | null }>(
        `SELECT credential_id AS id, renewed_from, NULL AS renewed_by FROM issuances
           WHERE credential_id IN (SELECT value FROM json_each(?)) AND renewed_from IS NOT NULL
         UNION ALL
         SELECT renewed_from AS id, NULL, credential_id FROM issuances
           WHERE renewed_from IN (SELECT value FROM json_each(?))`,
      )
      .all(ids, ids);
    return mergeLinks(rows);
  }

  async batchOf(credentialId: string): Promise<string | null> {
    const row = this.db
      .prepare<[string], { batch_id: string | null }>(
        'SELECT batch_id FROM issuances WHERE credential_id = ?',
      )
      .get(credentialId);
    return row?.batch_id ?? null;
  }

  async activeFor(
    holderDid: string,
    schemaId: string,
    proofType: ProofType,
    now: Date,
  ): Promise<IssuanceSummary[]> {
    return this.active.all(holderDid, schemaId, proofType, now.toISOString()).map(rowToSummary);
  }

  async issuancesPerHour(since: Date): Promise<HourlyIssuances[]> {
    return this.perHour.all(since.toISOString()).map((r) => ({
      hour: r.hour,
      channel: r.channel as HourlyIssuances['channel'],
      proofType: r.proof_type as HourlyIssuances['proofType'],
      count: r.n,
    }));
  }
}
