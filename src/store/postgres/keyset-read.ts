import type { QueryResultRow } from 'pg';
import {
  type KeysetPage,
  type KeysetRows,
  type KeysetStatements,
  type PgStatement,
  pageOf,
} from '../keyset.js';
import { type PgPool, withTransaction } from './database.js';

/**
 * One keyset page (docs/interface.md "Paging") in one read-only snapshot: the page, where the scan
 * ended and the total describe the same instant.
 */
export function readKeysetPage<Row extends QueryResultRow, End extends QueryResultRow, Key, Rec>(
  pool: PgPool,
  { page, scanEnd, count }: KeysetStatements<PgStatement>,
  q: { limit: number; total?: boolean | undefined },
  rows: KeysetRows<Row, End, Key, Rec>,
): Promise<KeysetPage<Rec, Key>> {
  return withTransaction(
    pool,
    async (client): Promise<KeysetPage<Rec, Key>> => {
      const read = await client.query<Row>(page.text, page.values);
      let end: Key | null = null;
      if (scanEnd && read.rows.length <= q.limit) {
        const found = await client.query<End>(scanEnd.text, scanEnd.values);
        end = found.rows[0] ? rows.endKey(found.rows[0]) : null;
      }
      const { rows: kept, next } = pageOf(read.rows, q.limit, rows.key, () => end);
      const records = kept.map(rows.record);
      if (!q.total) return { records, next };
      const total = await client.query<{ n: number }>(count.text, count.values);
      return { records, next, total: total.rows[0]?.n ?? 0 };
    },
    'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
  );
}
