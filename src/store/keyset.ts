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

/** One filter condition (`sql`: text, or how to write it); `drives` when an index answers it in sort order. */
export interface FilterTerm<S = string> {
  sql: S;
  drives: boolean;
}

/**
 * The first term that an index answers drives the read (the caller lists terms most selective
 * first); every other term filters the rows it yields.
 */
export function splitFilters<S>(terms: readonly FilterTerm<S>[]): { drive: S[]; rest: S[] } {
  const driver = terms.find((t) => t.drives);
  return {
    drive: driver ? [driver.sql] : [],
    rest: terms.filter((t) => t !== driver).map((t) => t.sql),
  };
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
