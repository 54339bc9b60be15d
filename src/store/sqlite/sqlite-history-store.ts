import type { HistoryQuery, HistoryStatusFilter, IssuanceHistoryStore, IssuanceSummary } from '../store.js';
import type { SqliteDatabase } from './database.js';
import { rowToSummary, type SummaryRow } from './sqlite-issuance-store.js';

// Never `claims`, `subject_hash` or `envelope`: history shows metadata only.
const COLUMNS = `credential_id, holder_did, schema_id, proof_type, revocation_nonce, status_partition, status_index,
  kid, created_at, expires_at, status, revoked_at, upload_state, storage_path`;

// Dates are stored as toISOString() text, so text comparison is time order.
const STATUS_SQL: Record<HistoryStatusFilter, string> = {
  valid: 'status = 0 AND expires_at > @now',
  revoked: 'status = 1',
  suspended: 'status = 2 AND expires_at > @now',
  expired: 'status != 1 AND expires_at <= @now',
  upload_pending: "upload_state = 'pending'",
  upload_failed: "upload_state = 'failed'",
};

/** `GET /admin/issuance-history` (docs/interface.md) over the issuances table. */
export class SqliteHistoryStore implements IssuanceHistoryStore {
  private readonly active;

  constructor(private readonly db: SqliteDatabase) {
    this.active = db.prepare<[string, string, string], SummaryRow>(
      // Direct issuance is SD-JWT: a holder's Iden3 credential of the schema is another credential.
      `SELECT ${COLUMNS} FROM issuances WHERE holder_did = ? AND schema_id = ? AND proof_type = 'SD_JWT_VC' AND status != 1 AND expires_at > ?
       ORDER BY created_at DESC, rowid DESC`,
    );
  }

  async list(q: HistoryQuery): Promise<{ records: IssuanceSummary[]; total: number }> {
    const where: string[] = [];
    const params: Record<string, string | number> = { now: q.now.toISOString() };
    if (q.holderDid !== undefined) {
      where.push('holder_did = @holderDid');
      params.holderDid = q.holderDid;
    }
    if (q.schemaId !== undefined) {
      where.push('schema_id = @schemaId');
      params.schemaId = q.schemaId;
    }
    if (q.revocationNonce !== undefined) {
      where.push('revocation_nonce = @nonce');
      params.nonce = q.revocationNonce;
    }
    if (q.proofType !== undefined) {
      where.push('proof_type = @proofType');
      params.proofType = q.proofType;
    }
    if (q.emailHash !== undefined) {
      where.push('email_hash = @emailHash');
      params.emailHash = q.emailHash;
    }
    if (q.status !== undefined) where.push(STATUS_SQL[q.status]);
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    // rowid breaks ties: created_at has whole seconds, and paging must be stable.
    const dir = q.order === 'createdAt_asc' ? 'ASC' : 'DESC';
    const read = this.db.transaction(() => {
      const total = this.db
        .prepare<Record<string, string | number>, { n: number }>(
          `SELECT COUNT(*) AS n FROM issuances ${clause}`,
        )
        .get(params)!.n;
      const rows = this.db
        .prepare<Record<string, string | number>, SummaryRow>(
          `SELECT ${COLUMNS} FROM issuances ${clause} ORDER BY created_at ${dir}, rowid ${dir}
           LIMIT @limit OFFSET @offset`,
        )
        .all({ ...params, limit: q.limit, offset: (q.page - 1) * q.limit });
      return { total, records: rows.map(rowToSummary) };
    });
    // One read transaction: the page and the total describe the same snapshot.
    return read.deferred();
  }

  async activeFor(holderDid: string, schemaId: string, now: Date): Promise<IssuanceSummary[]> {
    return this.active.all(holderDid, schemaId, now.toISOString()).map(rowToSummary);
  }
}
