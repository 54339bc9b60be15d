import type { ProofType } from '../model.js';
import type { HistoryStatusFilter } from './store.js';

/**
 * Keyset paging shared by the engines' history and audit reads (docs/interface.md "Paging"): a
 * page is the rows after the previous page's last sort key, read through an index in sort order,
 * so a page costs the same on the first and the millionth row, and rows inserted meanwhile never
 * shift what comes next.
 */

/**
 * Rows a keyset read looks at, at most, to fill one page. A filter the driving index does not
 * answer (a second filter, or a time condition such as `valid`) is checked row by row on what the
 * index yields; this bound keeps such a read short however rare the matches are (better-sqlite3
 * answers on the server's only thread). The page then ends early and its cursor continues from
 * the last row looked at.
 */
export const SCAN_LIMIT = 2000;

/** One SQLite statement with its named parameters (exported for the query-plan tests). */
export interface SqliteStatement {
  sql: string;
  params: Record<string, string | number>;
}

/** One PostgreSQL statement with its numbered parameters (exported for the query-plan tests). */
export interface PgStatement {
  text: string;
  values: unknown[];
}

/**
 * One filter condition (`sql`: text, or how to write it); `drives` when an index answers it in sort
 * order; `reads`, the columns it reads (a history read checks a term row by row on these alone,
 * see `splitFilters`).
 */
export interface FilterTerm<S = string> {
  sql: S;
  drives: boolean;
  reads?: readonly string[];
}

/**
 * Each history status filter as the part a partial index answers in (created_at, id) order and
 * the part checked on the rows it yields; `now` is the engine's placeholder for the query's time.
 * The SQL is the same on both engines (their migrations build the matching partial indexes).
 */
export function statusFilterSql(
  now: string,
): Record<HistoryStatusFilter, { indexed?: string; rest?: string; reads: readonly string[] }> {
  return {
    valid: { rest: `status = 0 AND expires_at > ${now}`, reads: ['status', 'expires_at'] },
    revoked: { indexed: 'status = 1', reads: ['status'] },
    // A suspended credential past its expiry is expired: the suspended index holds expires_at
    // (migrations 020 on SQLite, 022 on PostgreSQL), so the walk checks it without the table row.
    suspended: { indexed: 'status = 2', rest: `expires_at > ${now}`, reads: ['status', 'expires_at'] },
    expired: { rest: `status <> 1 AND expires_at <= ${now}`, reads: ['status', 'expires_at'] },
    upload_pending: { rest: "upload_state = 'pending'", reads: ['upload_state'] },
    upload_failed: { indexed: "upload_state = 'failed'", reads: ['upload_state'] },
  };
}

/**
 * The proof type whose rows the history's partial index `issuances_bjj_created` holds (SQLite
 * migrations 009 and 014, PostgreSQL 011): the database's own fact, so the value is written as
 * those migrations' WHERE writes it.
 */
const PARTIALLY_INDEXED_PROOF_TYPE: string = 'BJJ_SIG_2021';

/**
 * The history's proof type filter. The partially indexed proof type drives the read (its WHERE
 * names the value, so the SQL does too); other ones, most rows, are checked row by row.
 */
export function proofFilterSql(proofType: ProofType): FilterTerm {
  return {
    sql: `proof_type = '${proofType}'`,
    drives: proofType === PARTIALLY_INDEXED_PROOF_TYPE,
    reads: ['proof_type'],
  };
}

/**
 * The first term that an index answers drives the read (the caller lists terms most selective
 * first); every other term filters the rows it yields. `reads`: the columns those other terms
 * read, which a bounded history read takes from the driving index when it holds them, reading a
 * table row only for the rows it keeps.
 */
export function splitFilters<T extends FilterTerm<unknown>>(
  terms: readonly T[],
): { driver: T | undefined; drive: T['sql'][]; rest: T['sql'][]; reads: string[] } {
  const driver = terms.find((t) => t.drives);
  const others = terms.filter((t) => t !== driver);
  return {
    driver,
    drive: driver ? [driver.sql] : [],
    rest: others.map((t) => t.sql),
    reads: [...new Set(others.flatMap((t) => t.reads ?? []))],
  };
}

/** A keyset read's statements: the page (`limit + 1` rows), where a bounded scan ended, the total. */
export interface KeysetStatements<S> {
  page: S;
  /** Read only when the page holds at most `limit` rows (it ended early). */
  scanEnd?: S | undefined;
  count: S;
}

/** How an engine's rows become a page: a row's sort key, the scan end's, and the row's record. */
export interface KeysetRows<Row, End, Key, Rec> {
  key: (row: Row) => Key;
  endKey: (end: End) => Key;
  record: (row: Row) => Rec;
}

/** A page of records, the sort key the next starts after, and the total when it was asked for. */
export interface KeysetPage<Rec, Key> {
  records: Rec[];
  next: Key | null;
  total?: number | undefined;
}

/**
 * A page from `limit + 1` rows read in sort order: the extra row only says that more follow. The
 * next page starts after the last row kept; `scanEnd` is where a bounded read stopped when it
 * filled less than a page.
 */
export function pageOf<R, K>(
  rows: R[],
  limit: number,
  keyOf: (r: R) => K,
  scanEnd: () => K | null,
): { rows: R[]; next: K | null } {
  if (rows.length > limit) {
    const kept = rows.slice(0, limit);
    return { rows: kept, next: keyOf(kept[kept.length - 1]!) };
  }
  return { rows, next: scanEnd() };
}
