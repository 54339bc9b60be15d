import {
  type KeysetPage,
  type KeysetRows,
  type KeysetStatements,
  pageOf,
  type SqliteStatement,
} from '../keyset.js';
import type { SqliteDatabase } from './database.js';
import type { SqliteReader } from './sqlite-reader.js';

type Params = SqliteStatement['params'];

/**
 * One keyset page (docs/interface.md "Paging") in one read transaction, so that the page, where
 * the scan ended and the total describe the same snapshot. A total or an OFFSET page reads every
 * row it matches or skips, so with a reader it is read on the reader's thread.
 */
export async function readKeysetPage<Row, End, Key, Rec>(
  db: SqliteDatabase,
  reader: SqliteReader | undefined,
  { page, scanEnd, count }: KeysetStatements<SqliteStatement>,
  q: { limit: number; total?: boolean | undefined; page?: number | undefined },
  rows: KeysetRows<Row, End, Key, Rec>,
): Promise<KeysetPage<Rec, Key>> {
  if (reader && (q.total || q.page !== undefined)) {
    const read = await reader.read<Row, End>({
      page,
      scanEnd,
      count: q.total ? count : undefined,
      limit: q.limit,
    });
    const { rows: kept, next } = pageOf(read.rows, q.limit, rows.key, () =>
      read.end ? rows.endKey(read.end) : null,
    );
    const records = kept.map(rows.record);
    return read.n === undefined ? { records, next } : { records, next, total: read.n };
  }
  const read = db.transaction((): KeysetPage<Rec, Key> => {
    const all = db.prepare<Params, Row>(page.sql).all(page.params);
    const { rows: kept, next } = pageOf(all, q.limit, rows.key, () => {
      if (!scanEnd) return null;
      const end = db.prepare<Params, End>(scanEnd.sql).get(scanEnd.params);
      return end ? rows.endKey(end) : null;
    });
    const records = kept.map(rows.record);
    if (!q.total) return { records, next };
    return { records, next, total: db.prepare<Params, { n: number }>(count.sql).get(count.params)!.n };
  });
  return read.deferred();
}
