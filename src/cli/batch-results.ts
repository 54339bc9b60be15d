import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { stringify } from 'csv-stringify/sync';
import { InputFileError, readCsv } from './csv-input.js';

// The result file of `batch-issue` and the identity of a run: what a resumed run reads to skip
// the rows already done, and the keys that make its resent rows replays.

export const RESULT_COLUMNS = ['row', 'email', 'credentialId', 'revocationNonce', 'status', 'error'] as const;
export type RowStatus = 'issued' | 'pending' | 'existing' | 'failed';
/** Rows with these results are done: a rerun skips them. */
export const DONE_STATUSES: ReadonlySet<string> = new Set<RowStatus>(['issued', 'pending', 'existing']);

export interface ResultLine {
  row: number;
  email: string;
  credentialId: string;
  revocationNonce: string;
  status: RowStatus;
  error: string;
}

/** Reads a result file; a row reported more than once keeps its last report. */
export function readResultFile(text: string): Map<number, ResultLine> {
  const { header, records } = readCsv(text);
  if (RESULT_COLUMNS.some((c, i) => header[i] !== c)) {
    throw new InputFileError([
      { line: 1, field: 'header', message: `a result file starts with ${RESULT_COLUMNS.join(',')}` },
    ]);
  }
  const out = new Map<number, ResultLine>();
  for (const { line, cells } of records) {
    const [row, email, credentialId, revocationNonce, status, error] = cells;
    if (!row || !/^\d+$/.test(row) || !['issued', 'pending', 'existing', 'failed'].includes(status ?? '')) {
      // A line cut short by an interruption is simply not a result.
      if (line === records[records.length - 1]?.line) continue;
      throw new InputFileError([{ line, field: 'row', message: 'not a result line' }]);
    }
    out.set(Number(row), {
      row: Number(row),
      email: email ?? '',
      credentialId: credentialId ?? '',
      revocationNonce: revocationNonce ?? '',
      status: status as RowStatus,
      error: error ?? '',
    });
  }
  return out;
}

export const resultCsv = (lines: ResultLine[]): string =>
  stringify(lines.map((l) => RESULT_COLUMNS.map((c) => String(l[c]))));

/**
 * The Idempotency-Key of one row: the same input file, result file and row give the same key, so
 * a resumed run replays what the server already did for a row whose answer never reached the
 * result file. A new result file is a new batch.
 */
export function rowIdempotencyKey(inputFile: string, resultFile: string, line: number): string {
  const digest = createHash('sha256')
    .update(`${resolve(inputFile)}\n${resolve(resultFile)}\n${line}`)
    .digest('hex');
  return `batch-${digest}`;
}

/**
 * The id of a batch-issue run, recorded with each of its credentials (the bulk status change
 * selector's `batchId`): the same input and result file give the same id, so a resumed run is the
 * same batch, as its Idempotency-Keys are.
 */
export function batchIdOf(inputFile: string, resultFile: string): string {
  const digest = createHash('sha256')
    .update(`${resolve(inputFile)}\n${resolve(resultFile)}`)
    .digest('hex');
  return `batch-${digest.slice(0, 24)}`;
}
