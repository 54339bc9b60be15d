import {
  type ColumnReader,
  type IssuanceColumns,
  issuanceFromRow,
  type SummaryColumns,
  summaryFromRow,
} from '../issuance-row.js';
import type { IssuanceRecord, IssuanceSummary } from '../store.js';

/**
 * Rows as `pg` returns them: timestamptz → Date (the driver's parser), bigint → string (parsed
 * here: nonces are below 2^53 by the table's check, so Number() is exact).
 */
export type IssuanceRow = IssuanceColumns<Date, string, Date>;
export type SummaryRow = SummaryColumns<Date, string>;

/** The columns admin history may read: metadata only, never the envelope. */
export const SUMMARY_COLUMNS = `credential_id, channel, holder_did, schema_id, proof_type, revocation_nonce, status_partition,
  status_index, kid, created_at, expires_at, status, revoked_at, upload_state, storage_path`;

const read: ColumnReader<Date, string, Date> = { time: (d) => d, nonce: Number, epoch: (d) => d };

export const rowToSummary = (r: SummaryRow): IssuanceSummary => summaryFromRow(r, read);
export const rowToIssuance = (r: IssuanceRow): IssuanceRecord => issuanceFromRow(r, read);
