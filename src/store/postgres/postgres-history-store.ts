import type { HistoryQuery, HistoryStatusFilter, IssuanceHistoryStore, IssuanceSummary } from '../store.js';
import { type PgPool, withTransaction } from './database.js';
import { rowToSummary, SUMMARY_COLUMNS, type SummaryRow } from './rows.js';

// `$1` is always the query's `now`.
const STATUS_SQL: Record<HistoryStatusFilter, string> = {
  valid: 'status = 0 AND expires_at > $1',
  revoked: 'status = 1',
  suspended: 'status = 2 AND expires_at > $1',
  expired: 'status <> 1 AND expires_at <= $1',
  upload_pending: "upload_state = 'pending'",
  upload_failed: "upload_state = 'failed'",
};

/** `GET /admin/issuance-history` (docs/interface.md) over the issuances table. */
export class PostgresHistoryStore implements IssuanceHistoryStore {
  constructor(private readonly pool: PgPool) {}

  async list(q: HistoryQuery): Promise<{ records: IssuanceSummary[]; total: number }> {
    const params: unknown[] = [q.now];
    // `now` is only used by some status filters; a comparison that is always true keeps $1 typed.
    const where: string[] = ['$1::timestamptz IS NOT NULL'];
    const add = (column: string, value: unknown) => {
      params.push(value);
      where.push(`${column} = $${params.length}`);
    };
    if (q.holderDid !== undefined) add('holder_did', q.holderDid);
    if (q.schemaId !== undefined) add('schema_id', q.schemaId);
    if (q.revocationNonce !== undefined) add('revocation_nonce', q.revocationNonce);
    if (q.proofType !== undefined) add('proof_type', q.proofType);
    if (q.emailHash !== undefined) add('email_hash', q.emailHash);
    if (q.status !== undefined) where.push(STATUS_SQL[q.status]);
    const clause = `WHERE ${where.join(' AND ')}`;
    // seq breaks created_at ties: paging must be stable.
    const dir = q.order === 'createdAt_asc' ? 'ASC' : 'DESC';
    // One snapshot: the page and the total describe the same instant.
    return withTransaction(
      this.pool,
      async (client) => {
        const total = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM issuances ${clause}`,
          params,
        );
        const rows = await client.query<SummaryRow>(
          `SELECT ${SUMMARY_COLUMNS} FROM issuances ${clause} ORDER BY created_at ${dir}, seq ${dir}
           LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
          [...params, q.limit, (q.page - 1) * q.limit],
        );
        return { total: total.rows[0]?.n ?? 0, records: rows.rows.map(rowToSummary) };
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }

  async activeFor(holderDid: string, schemaId: string, now: Date): Promise<IssuanceSummary[]> {
    // Direct issuance is SD-JWT: a holder's Iden3 credential of the schema is another credential.
    const { rows } = await this.pool.query<SummaryRow>({
      name: 'pg-active-for',
      text: `SELECT ${SUMMARY_COLUMNS} FROM issuances WHERE holder_did = $1 AND schema_id = $2
        AND proof_type = 'SD_JWT_VC' AND status <> 1 AND expires_at > $3 ORDER BY created_at DESC, seq DESC`,
      values: [holderDid, schemaId, now],
    });
    return rows.map(rowToSummary);
  }
}
