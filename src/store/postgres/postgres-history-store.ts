import type { ProofType } from '../../model.js';
import {
  type FilterTerm,
  type PgStatement,
  proofFilterSql,
  SCAN_LIMIT,
  splitFilters,
  statusFilterSql,
} from '../keyset.js';
import { mergeLinks } from '../renewal-store.js';
import type {
  HistoryCursor,
  HistoryPage,
  HistoryQuery,
  HourlyIssuances,
  IssuanceHistoryStore,
  IssuanceSummary,
  RenewalLinks,
} from '../store.js';
import type { PgPool } from './database.js';
import { readKeysetPage } from './keyset-read.js';
import { rowToSummary, SUMMARY_COLUMNS, type SummaryRow } from './rows.js';

/**
 * Each status filter as the part a partial index of migrations 011 and 023 answers in (created_at, seq)
 * order and the part checked on the rows it yields. `$1` is always the query's `now`.
 */
const STATUS_SQL: ReturnType<typeof statusFilterSql> = {
  ...statusFilterSql('$1'),
  // Failed uploads through issuances_upload_error_created (migration 023): a failed upload always
  // has an error, and the index names no column an "uploaded" mark changes.
  upload_failed: {
    indexed: "last_error IS NOT NULL AND upload_state = 'failed'",
    reads: ['last_error', 'upload_state'],
  },
};
const KEPT_COLUMNS = SUMMARY_COLUMNS.split(',')
  .map((c) => `i.${c.trim()}`)
  .join(', ');

/**
 * The statements of one history read, exported for the query-plan tests: `page` (limit + 1 rows),
 * `scanEnd` (where a bounded read stopped; only when some filter is checked row by row) and
 * `count`.
 */
export function historyStatements(q: HistoryQuery): {
  page: PgStatement;
  scanEnd?: PgStatement | undefined;
  count: PgStatement;
} {
  // Most selective first: the first one an index answers drives the read. PostgreSQL wants
  // exactly the parameters a statement names, so each term numbers its own when it is written.
  const terms: FilterTerm<(param: Param) => string>[] = [];
  const add = (column: string, value: unknown) => {
    if (value !== undefined)
      terms.push({ sql: (param) => `${column} = ${param(value)}`, drives: true, reads: [column] });
  };
  add('revocation_nonce', q.revocationNonce);
  add('holder_did', q.holderDid);
  add('email_hash', q.emailHash);
  add('batch_id', q.batchId);
  const status = q.status === undefined ? undefined : STATUS_SQL[q.status];
  if (status?.indexed) terms.push({ sql: fixed(status.indexed), drives: true, reads: status.reads });
  add('schema_id', q.schemaId);
  // A date range alone is read through issuances_created; beside another filter it is checked.
  const { createdFrom, createdTo, channel } = q;
  const range: Array<(param: Param) => string> = [];
  if (createdFrom !== undefined) range.push((param) => `created_at >= ${param(createdFrom)}::timestamptz`);
  if (createdTo !== undefined) range.push((param) => `created_at < ${param(createdTo)}::timestamptz`);
  if (range.length > 0)
    terms.push({
      sql: (param) => range.map((r) => r(param)).join(' AND '),
      drives: true,
      reads: ['created_at'],
    });
  if (channel !== undefined)
    terms.push({ sql: (param) => `channel = ${param(channel)}`, drives: false, reads: ['channel'] });
  if (q.proofType !== undefined) {
    const { sql, drives, reads } = proofFilterSql(q.proofType);
    terms.push({ sql: fixed(sql), drives, reads });
  }
  if (status?.rest) terms.push({ sql: fixed(status.rest), drives: false, reads: status.reads });
  const { drive, rest, reads } = splitFilters(terms);

  // `now` is only used by some status filters; a comparison that is always true keeps $1 typed.
  const build = (
    write: (param: Param, where: (conds: Array<(param: Param) => string>) => string) => string,
  ) => {
    const values: unknown[] = [q.now];
    const param: Param = (v) => `$${values.push(v)}`;
    const where = (conds: Array<(param: Param) => string>) =>
      `WHERE ${['$1::timestamptz IS NOT NULL', ...conds.map((c) => c(param))].join(' AND ')}`;
    return { text: write(param, where), values };
  };
  const count = build(
    (_, where) => `SELECT count(*)::int AS n FROM issuances ${where(terms.map((t) => t.sql))}`,
  );

  // seq breaks created_at ties: pages must be stable.
  const dir = q.order === 'createdAt_asc' ? 'ASC' : 'DESC';
  const order = `ORDER BY created_at ${dir}, seq ${dir}`;
  if (q.page !== undefined) {
    const page = build(
      (
        param,
        where,
      ) => `SELECT seq, ${SUMMARY_COLUMNS} FROM issuances ${where(terms.map((t) => t.sql))} ${order}
        LIMIT ${param(q.limit + 1)} OFFSET ${param((q.page! - 1) * q.limit)}`,
    );
    return { page, count };
  }

  const after = q.after;
  // Row comparison: an index on (…, created_at, seq) seeks to it; one on (…, created_at) to its first column.
  const keyset = after
    ? [
        (param: Param) =>
          `(created_at, seq) ${dir === 'ASC' ? '>' : '<'} (${param(after.createdAt)}::timestamptz, ${param(after.id)}::bigint)`,
      ]
    : [];
  if (rest.length === 0) {
    const page = build(
      (param, where) =>
        `SELECT seq, ${SUMMARY_COLUMNS} FROM issuances ${where([...drive, ...keyset])} ${order} LIMIT ${param(q.limit + 1)}`,
    );
    return { page, count };
  }
  // The filter sees at most SCAN_LIMIT rows of the driving index, read lazily in its order. The
  // bounded read takes only the key and the columns the filter reads, so where the driving index
  // holds them it reads no table row; the page's rows are fetched by seq once kept.
  const scanned = ['seq', 'created_at', ...reads.filter((c) => c !== 'created_at')];
  const page = build(
    (
      param,
      where,
    ) => `SELECT kept.seq, ${KEPT_COLUMNS} FROM (SELECT seq, created_at FROM (SELECT ${scanned.join(', ')}
      FROM issuances ${where([...drive, ...keyset])} ${order} LIMIT ${param(SCAN_LIMIT)}) AS scanned
      WHERE ${rest.map((r) => r(param)).join(' AND ')} ${order} LIMIT ${param(q.limit + 1)}) AS kept
      JOIN issuances AS i ON i.seq = kept.seq ORDER BY kept.created_at ${dir}, kept.seq ${dir}`,
  );
  const scanEnd = build(
    (param, where) => `SELECT created_at, seq FROM issuances ${where([...drive, ...keyset])} ${order}
      LIMIT 1 OFFSET ${param(SCAN_LIMIT - 1)}`,
  );
  return { page, scanEnd, count };
}

type Param = (value: unknown) => string;
const fixed = (sql: string) => () => sql;

type KeyedRow = SummaryRow & { seq: string };
const keyOf = (r: { created_at: Date; seq: string }): HistoryCursor => ({
  createdAt: r.created_at,
  id: Number(r.seq),
});

/** `GET /admin/issuance-history` (docs/interface.md) over the issuances table. */
export class PostgresHistoryStore implements IssuanceHistoryStore {
  constructor(private readonly pool: PgPool) {}

  async list(q: HistoryQuery): Promise<HistoryPage> {
    return readKeysetPage<KeyedRow, { created_at: Date; seq: string }, HistoryCursor, IssuanceSummary>(
      this.pool,
      historyStatements(q),
      q,
      { key: keyOf, endKey: keyOf, record: rowToSummary },
    );
  }

  async activeFor(
    holderDid: string,
    schemaId: string,
    proofType: ProofType,
    now: Date,
  ): Promise<IssuanceSummary[]> {
    const { rows } = await this.pool.query<SummaryRow>({
      name: 'pg-active-for',
      text: `SELECT ${SUMMARY_COLUMNS} FROM issuances WHERE holder_did = $1 AND schema_id = $2
        AND proof_type = $3 AND status <> 1 AND expires_at > $4 ORDER BY created_at DESC, seq DESC`,
      values: [holderDid, schemaId, proofType, now],
    });
    return rows.map(rowToSummary);
  }

  async renewalLinks(credentialIds: string[]): Promise<Map<string, RenewalLinks>> {
    if (credentialIds.length === 0) return new Map();
    // Both directions through indexes: the primary key, and issuances_renewed_from.
    const { rows } = await this.pool.query<{
      id: string;
      renewed_from: string | null;
      renewed_by: string | null;
    }>({
      name: 'pg-renewal-links',
      text: `SELECT credential_id AS id, renewed_from, NULL::text AS renewed_by FROM issuances
               WHERE credential_id = ANY($1::text[]) AND renewed_from IS NOT NULL
             UNION ALL
             SELECT renewed_from AS id, NULL::text, credential_id FROM issuances WHERE renewed_from = ANY($1::text[])`,
      values: [credentialIds],
    });
    return mergeLinks(rows);
  }

  async batchOf(credentialId: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ batch_id: string | null }>({
      name: 'pg-batch-of',
      text: 'SELECT batch_id FROM issuances WHERE credential_id = $1',
      values: [credentialId],
    });
    return rows[0]?.batch_id ?? null;
  }

  async issuancesPerHour(since: Date): Promise<HourlyIssuances[]> {
    const { rows } = await this.pool.query<{ hour: string; channel: string; proof_type: string; n: number }>(
      `SELECT to_char(date_trunc('hour', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24') AS hour,
         channel, proof_type, count(*)::int AS n
       FROM issuances WHERE created_at >= $1 GROUP BY 1, 2, 3 ORDER BY 1`,
      [since],
    );
    return rows.map((r) => ({
      hour: r.hour,
      channel: r.channel as HourlyIssuances['channel'],
      proofType: r.proof_type as HourlyIssuances['proofType'],
      count: r.n,
    }));
  }
}
