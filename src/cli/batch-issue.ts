import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { SingleBar } from 'cli-progress';
import { stringify } from 'csv-stringify/sync';
import { ExpirationSchema, type OnDuplicate } from '../issuance/direct-input.js';
import { RecipientEmailSchema } from '../issuance/recipient-email.js';
import { AdminApiError, type AdminClient } from './admin-client.js';
import {
  buildSubject,
  InputFileError,
  type LineProblem,
  readCsv,
  SUBJECT_PREFIX,
  stringCell,
  subjectColumns,
} from './csv-input.js';
import { type CliIo, json } from './output.js';

/** The body of `POST /admin/issue-vc` for one row. */
export interface IssueBody {
  userId: string;
  schemaId: string;
  /** Left empty by the CSV when neither a vct cell nor --vct is given: the schema's own is filled in. */
  vct: string;
  /** Left empty when neither an expiration cell nor --expiration is given: the schema's lifetime fills it. */
  expiration: string;
  /** The row's claims, or (a `user` column) the claims provider's user id whose claims are issued. */
  credentialSubject?: Record<string, unknown>;
  claimsUserId?: string;
  onDuplicate: OnDuplicate;
  /** The run's id (`batchIdOf`), added when sent. */
  batchId?: string;
}

/**
 * The expiration `issue` and `batch-issue` give a credential when none is named: `now` plus the
 * schema's `expiresInSeconds`, in whole seconds.
 */
export function defaultExpiration(lifetimeSeconds: number, now = Date.now()): string {
  return new Date(now + lifetimeSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface BatchRow {
  line: number;
  email: string;
  body: IssueBody;
}

export interface BatchDefaults {
  schema?: string | undefined;
  vct?: string | undefined;
  expiration?: string | undefined;
  onDuplicate: OnDuplicate;
}

const FIXED_COLUMNS = new Map([
  ['email', 'email'],
  ['expiration', 'expiration'],
  ['schemaId', 'schemaId'],
  ['schema', 'schemaId'],
  ['vct', 'vct'],
  ['user', 'user'],
]);

/**
 * Reads a batch CSV (columns `email`, `expiration`, `schemaId`, `vct`, and either
 * `credentialSubject.<claim>` columns or a `user` column naming the claims provider's user; the
 * options stand in for missing columns or empty cells) and checks every row locally. Every
 * problem is collected, with its line, so that nothing is sent while any row is bad. A row
 * without an expiration is given the schema's lifetime when sent, as `issue` does.
 */
export function parseBatchCsv(
  text: string,
  defaults: BatchDefaults,
): { rows: BatchRow[]; problems: LineProblem[] } {
  const { header, records } = readCsv(text);
  const byUser = header.includes('user');
  const { columns, problems } = subjectColumns(header);
  if (byUser) {
    // The claims come from the provider: claim columns would be a second, conflicting source.
    const hasColumns = columns.length > 0 || header.some((h) => h.startsWith(SUBJECT_PREFIX));
    problems.length = 0;
    if (hasColumns)
      problems.push({
        line: 1,
        field: 'user',
        message: `a user column or ${SUBJECT_PREFIX}<claim> columns, not both`,
      });
  }
  const fixed = new Map<string, number>();
  header.forEach((name, index) => {
    if (name.startsWith(SUBJECT_PREFIX)) return;
    const canonical = FIXED_COLUMNS.get(name);
    if (!canonical)
      problems.push({ line: 1, field: name || `column ${index + 1}`, message: 'unknown column' });
    else if (fixed.has(canonical)) problems.push({ line: 1, field: name, message: 'a duplicate column' });
    else fixed.set(canonical, index);
  });
  if (!fixed.has('email')) problems.push({ line: 1, field: 'email', message: 'the email column is missing' });
  if (!fixed.has('schemaId') && defaults.schema === undefined)
    problems.push({ line: 1, field: 'schemaId', message: 'no schemaId column and no --schema option' });
  if (problems.length > 0) return { rows: [], problems };

  const rows: BatchRow[] = [];
  for (const { line, cells } of records) {
    if (cells.length !== header.length) {
      problems.push({
        line,
        field: 'row',
        message: `${cells.length} cells where the header has ${header.length}`,
      });
      continue;
    }
    const cell = (column: string) => {
      const index = fixed.get(column);
      return index === undefined ? undefined : stringCell(cells[index]!);
    };
    const rowProblems: LineProblem[] = [];
    const email = RecipientEmailSchema.safeParse(cell('email') ?? '');
    if (!email.success) rowProblems.push({ line, field: 'email', message: email.error.issues[0]!.message });
    const expirationText = cell('expiration') ?? defaults.expiration;
    const expiration = expirationText === undefined ? undefined : ExpirationSchema.safeParse(expirationText);
    if (expiration && !expiration.success)
      rowProblems.push({ line, field: 'expiration', message: expiration.error.issues[0]!.message });
    const schemaId = cell('schemaId') ?? defaults.schema;
    if (!schemaId) rowProblems.push({ line, field: 'schemaId', message: 'required' });
    // Without a vct cell or --vct, the schema's own vct is used (the server names it when validating).
    const vct = cell('vct') ?? defaults.vct ?? '';
    const claims = byUser
      ? { claimsUserId: cell('user') }
      : { credentialSubject: buildSubject(cells, columns) };
    if (claims.claimsUserId === undefined && byUser)
      rowProblems.push({ line, field: 'user', message: 'required' });
    if (claims.credentialSubject && Object.keys(claims.credentialSubject).length === 0)
      rowProblems.push({ line, field: 'credentialSubject', message: 'every claim cell is empty' });
    problems.push(...rowProblems);
    if (rowProblems.length === 0) {
      rows.push({
        line,
        email: email.data!,
        body: {
          userId: email.data!,
          schemaId: schemaId!,
          vct,
          expiration: expirationText ?? '',
          ...claims,
          onDuplicate: defaults.onDuplicate,
        },
      });
    }
  }
  if (records.length === 0) problems.push({ line: 2, field: 'row', message: 'no data rows' });
  return { rows, problems };
}

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

const resultCsv = (lines: ResultLine[]): string =>
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

export interface BatchRunOptions extends BatchDefaults {
  file: string;
  out?: string | undefined;
  concurrency: number;
  json: boolean;
  /** Attempts per row for transient failures (unreachable, 429, 502-504). */
  attempts?: number;
}

export interface BatchSummary {
  /** The run's id, recorded with each credential it issued (`status bulk --batch`). */
  batchId: string;
  total: number;
  skipped: number;
  sent: number;
  issued: number;
  pending: number;
  existing: number;
  failed: number;
  interrupted: boolean;
  seconds: number;
  rowsPerSecond: number;
  resultFile: string;
  failures: Array<{ row: number; email: string; error: string }>;
  /** Why sending stopped early: the server answered 503 (shutting down or starting). */
  unavailable?: string;
}

interface IssueAnswer {
  credentialId: string;
  revocationNonce: string;
}

/** `admin batch-issue`: validate everything, then issue with bounded concurrency, resumably. */
export async function runBatchIssue(
  client: AdminClient,
  options: BatchRunOptions,
  io: CliIo,
): Promise<number> {
  const resultFile = resolve(options.out ?? `${options.file}.results.csv`);
  const { rows, problems } = parseBatchCsv(readFileSync(options.file, 'utf8'), options);
  const previous = existsSync(resultFile)
    ? readResultFile(readFileSync(resultFile, 'utf8'))
    : new Map<number, ResultLine>();
  for (const row of rows) {
    const before = previous.get(row.line);
    if (before && before.email.toLowerCase() !== row.email.toLowerCase()) {
      problems.push({
        line: row.line,
        field: 'email',
        message: `the result file has ${before.email} on this row: it belongs to another input (use --out)`,
      });
    }
  }
  const todo = rows.filter((r) => !DONE_STATUSES.has(previous.get(r.line)?.status ?? ''));
  // Rows that passed the local checks also get the server's, so one run reports every bad row.
  if (todo.length > 0) problems.push(...(await serverProblems(client, todo)));
  if (problems.length > 0) {
    problems.sort((a, b) => a.line - b.line);
    const badLines = new Set(problems.map((p) => p.line)).size;
    if (options.json) io.out(json({ ok: false, sent: 0, problems }));
    else {
      for (const p of problems) io.err(`line ${p.line}: ${p.field}: ${p.message}`);
      io.err(`${badLines} line(s) with problems; nothing was sent`);
    }
    return 1;
  }

  // A new result file is a new batch: its Idempotency-Keys are new, so only --on-duplicate ignore
  // keeps rows another result file recorded as issued from being issued again.
  if (options.out !== undefined && !existsSync(resultFile) && options.onDuplicate !== 'ignore')
    io.err(
      `warning: ${resultFile} is a new result file: rows already issued under another result file (such as ${resolve(`${options.file}.results.csv`)}) will be issued again unless --on-duplicate ignore is given`,
    );
  // Owner-only: the results name holders (emails) and credential ids.
  if (!existsSync(resultFile)) writeFileSync(resultFile, stringify([[...RESULT_COLUMNS]]), { mode: 0o600 });
  const batchId = batchIdOf(options.file, resultFile);
  if (!options.json) io.err(`batch ${batchId}`);
  const started = performance.now();
  const counts = { issued: 0, pending: 0, existing: 0, failed: 0 };
  const done: ResultLine[] = [];
  const progress = new Progress(todo.length, io);
  let stopping = false;
  /** Set when the server answers 503 (starting or shutting down): no new row is sent. */
  let unavailable: string | undefined;
  const onSigint = () => {
    stopping = true;
  };
  process.on('SIGINT', onSigint);
  let next = 0;
  const worker = async () => {
    while (!stopping && unavailable === undefined && next < todo.length) {
      const row = todo[next++]!;
      const result = await sendRow(
        client,
        { ...row, body: { ...row.body, batchId } },
        rowIdempotencyKey(options.file, resultFile, row.line),
        options.attempts ?? 4,
        io,
      );
      // Not a failure of the row: it stays without a result, and a rerun sends it.
      if ('unavailable' in result) {
        unavailable ??= result.unavailable;
        continue;
      }
      // Appended as soon as known: an interruption loses at most the rows in flight, which the
      // Idempotency-Key replays on the next run.
      appendFileSync(resultFile, resultCsv([result]));
      done.push(result);
      counts[result.status]++;
      progress.tick(counts.failed);
    }
  };
  try {
    await Promise.all(
      Array.from({ length: Math.max(1, Math.min(options.concurrency, todo.length)) }, worker),
    );
  } finally {
    process.off('SIGINT', onSigint);
    progress.stop();
  }

  // Rewritten in row order, one line per row, atomically.
  for (const r of done) previous.set(r.row, r);
  const tmp = `${resultFile}.tmp`;
  writeFileSync(
    tmp,
    stringify([[...RESULT_COLUMNS]]) + resultCsv([...previous.values()].sort((a, b) => a.row - b.row)),
    { mode: 0o600 },
  );
  renameSync(tmp, resultFile);

  const seconds = (performance.now() - started) / 1000;
  const summary: BatchSummary = {
    batchId,
    total: rows.length,
    skipped: rows.length - todo.length,
    sent: done.length,
    ...counts,
    interrupted: stopping || unavailable !== undefined,
    ...(unavailable ? { unavailable } : {}),
    seconds: Math.round(seconds * 1000) / 1000,
    rowsPerSecond: seconds > 0 ? Math.round((done.length / seconds) * 10) / 10 : 0,
    resultFile,
    failures: done
      .filter((d) => d.status === 'failed')
      .sort((a, b) => a.row - b.row)
      .map(({ row, email, error }) => ({ row, email, error })),
  };
  if (options.json) io.out(json(summary));
  else {
    for (const f of summary.failures) io.err(`line ${f.row}: ${f.email}: ${f.error}`);
    io.out(
      `${summary.total} rows: ${counts.issued} issued, ${counts.pending} pending upload, ${counts.existing} existing, ` +
        `${counts.failed} failed, ${summary.skipped} already done; ${summary.sent} sent in ${seconds.toFixed(1)} s ` +
        `(${summary.rowsPerSecond} rows/s)${stopping ? '; interrupted' : ''}`,
    );
    if (unavailable)
      io.err(
        `stopped sending: ${unavailable}; ${todo.length - done.length} row(s) not sent: rerun the same command to resume`,
      );
    io.out(`results: ${resultFile}`);
    io.out(`batch: ${batchId} (npm run admin -- status bulk revoke --batch ${batchId} --reason …)`);
  }
  if (stopping) return 130;
  if (unavailable) return 1;
  return counts.failed > 0 ? 1 : 0;
}

/** The server's field names as the batch file's columns. */
const batchField = (field: string): string => (field === 'claimsUserId' ? 'user' : field);

/**
 * The server's own checks of every row (schema, claims, frame), in requests under the body limit;
 * rows without a vct or an expiration get the schema's (one instant, `now`, for the whole run).
 */
async function serverProblems(client: AdminClient, rows: BatchRow[]): Promise<LineProblem[]> {
  const problems: LineProblem[] = [];
  const now = Date.now();
  let chunk: BatchRow[] = [];
  let size = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    const { body } = await client.call<{
      problems: Array<{ row: number; field: string; message: string }>;
      vct?: Record<string, string>;
      expiresInSeconds?: Record<string, number>;
    }>('POST', '/admin/issue-vc/validate', {
      body: {
        rows: chunk.map((r) => ({
          schemaId: r.body.schemaId,
          vct: r.body.vct || undefined,
          credentialSubject: r.body.credentialSubject,
          claimsUserId: r.body.claimsUserId,
        })),
      },
    });
    for (const p of body.problems)
      problems.push({ line: chunk[p.row]!.line, field: batchField(p.field), message: p.message });
    for (const row of chunk) {
      if (!row.body.vct) row.body.vct = body.vct?.[row.body.schemaId] ?? row.body.schemaId;
      const lifetime = body.expiresInSeconds?.[row.body.schemaId];
      if (!row.body.expiration && lifetime) row.body.expiration = defaultExpiration(lifetime, now);
    }
    chunk = [];
    size = 0;
  };
  for (const row of rows) {
    const bytes = JSON.stringify(row.body).length + 16;
    if (chunk.length >= 1000 || size + bytes > 80_000) await flush();
    chunk.push(row);
    size += bytes;
  }
  await flush();
  return problems;
}

/** How many times a row answered `409` in-progress is waited for before it counts as failed. */
const IN_PROGRESS_WAITS = 30;

async function sendRow(
  client: AdminClient,
  row: BatchRow,
  key: string,
  attempts: number,
  io: CliIo,
): Promise<ResultLine | { unavailable: string }> {
  const base = { row: row.line, email: row.email, credentialId: '', revocationNonce: '', error: '' };
  let waits = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      const { status, body } = await client.call<IssueAnswer>('POST', '/admin/issue-vc', {
        body: row.body,
        headers: { 'idempotency-key': key },
      });
      return {
        ...base,
        credentialId: body.credentialId,
        revocationNonce: body.revocationNonce,
        status: status === 200 ? 'existing' : status === 202 ? 'pending' : 'issued',
      };
    } catch (err) {
      // The admin rate limit paces the batch; waiting for it is not a failed attempt.
      if (err instanceof AdminApiError && err.status === 429) {
        attempt--;
        await delay(err.retryAfterMs ?? 1000);
        continue;
      }
      // The server is shutting down (or still starting): stop sending, leave the row for a rerun.
      if (err instanceof AdminApiError && err.status === 503)
        return { unavailable: `the server answered 503 ${err.code}: ${err.message}` };
      // The same row is still being issued (an earlier attempt whose answer was lost): wait for it.
      const inProgress =
        err instanceof AdminApiError &&
        err.status === 409 &&
        (err.details as { reason?: unknown } | undefined)?.reason === 'in-progress';
      if (inProgress && waits < IN_PROGRESS_WAITS) {
        waits++;
        attempt--;
        const waitMs = err.retryAfterMs ?? 1000;
        io.err(
          `line ${row.line}: ${row.email}: the server is still issuing this row (409 in-progress); retrying in ${(waitMs / 1000).toFixed(1)} s`,
        );
        await delay(waitMs);
        continue;
      }
      if (err instanceof AdminApiError && err.transient && attempt < attempts) {
        await delay(err.retryAfterMs ?? Math.min(8000, 500 * 2 ** (attempt - 1)));
        continue;
      }
      const error = err instanceof AdminApiError ? `${err.status} ${err.code}: ${err.message}` : String(err);
      return { ...base, status: 'failed', error };
    }
  }
}

/** A bar with rate and ETA on a terminal; a plain line every 5 % otherwise. */
class Progress {
  private readonly bar: SingleBar | undefined;
  private readonly started = performance.now();
  private readonly step: number;
  private value = 0;

  constructor(
    private readonly total: number,
    private readonly io: CliIo,
  ) {
    this.step = Math.max(1, Math.ceil(total / 20));
    if (io.errIsTTY) {
      this.bar = new SingleBar({
        stream: io.errStream,
        format:
          '{bar} {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {eta_formatted} | failed {failed}',
        hideCursor: true,
        etaBuffer: 200,
      });
      this.bar.start(total, 0, { rate: '0.0', failed: 0 });
    }
  }

  tick(failed: number): void {
    this.value++;
    const seconds = (performance.now() - this.started) / 1000;
    const rate = seconds > 0 ? this.value / seconds : 0;
    if (this.bar) {
      this.bar.update(this.value, { rate: rate.toFixed(1), failed });
      return;
    }
    if (this.value % this.step !== 0 && this.value !== this.total) return;
    const eta = rate > 0 ? Math.round((this.total - this.value) / rate) : 0;
    const pct = Math.floor((this.value / this.total) * 100);
    this.io.err(
      `${this.value}/${this.total} rows (${pct}%), ${rate.toFixed(1)} rows/s, ETA ${eta}s, failed ${failed}`,
    );
  }

  stop(): void {
    this.bar?.stop();
  }
}
