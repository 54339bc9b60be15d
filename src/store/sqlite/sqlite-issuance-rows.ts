import {
  type ColumnReader,
  type IssuanceColumns,
  issuanceFromRow,
  type SummaryColumns,
  summaryFromRow,
} from '../issuance-row.js';
import type { IssuanceRecord, IssuanceSummary } from '../store.js';

export type IssuanceRow = IssuanceColumns<string, number, number>;
export type SummaryRow = SummaryColumns<string, number>;

// ISO text timestamps; the outbox's times as epoch milliseconds.
const read: ColumnReader<string, number, number> = {
  time: (s) => new Date(s),
  nonce: (n) => n,
  epoch: (ms) => new Date(ms),
};

export const rowToSummary = (r: SummaryRow): IssuanceSummary => summaryFromRow(r, read);
export const rowToIssuance = (r: IssuanceRow): IssuanceRecord => issuanceFromRow(r, read);
