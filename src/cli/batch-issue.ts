import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { SingleBar } from 'cli-progress';
import { stringify } from 'csv-stringify/sync';
import { AdminApiError, type AdminClient } from './admin-client.js';
import { type BatchDefaults, type BatchRow, defaultExpiration, parseBatchCsv } from './batch-csv.js';
import {
  batchIdOf,
  DONE_STATUSES,
  RESULT_COLUMNS,
  type ResultLine,
  readResultFile,
  resultCsv,
  rowIdempotencyKey,
} from './batch-results.js';
import type { LineProblem } from './csv-input.js';
import { type CliIo, json } from './output.js';

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
