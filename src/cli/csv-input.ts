import { CsvError, parse } from 'csv-parse/sync';
import { RESERVED_CLAIMS } from '../schemas/schema-file.js';
import { InputFileError, type LineProblem } from './input-file-error.js';

export { InputFileError, type LineProblem } from './input-file-error.js';

export interface CsvRecord {
  /** Line the record starts on (a quoted cell may span lines). */
  line: number;
  cells: string[];
}

/** Parses CSV text (header first; `\n` or `\r\n`; blank lines skipped; a BOM ignored). */
export function readCsv(text: string): { header: string[]; records: CsvRecord[] } {
  let parsed: Array<{ record: string[]; raw: string; info: { lines: number } }>;
  try {
    parsed = parse(text, {
      bom: true,
      info: true,
      raw: true,
      skip_empty_lines: true,
      relax_column_count: true,
      record_delimiter: ['\r\n', '\n'],
    }) as unknown as typeof parsed;
  } catch (err) {
    const line = err instanceof CsvError ? ((err as CsvError & { lines?: number }).lines ?? 0) : 0;
    throw new InputFileError([{ line, field: 'csv', message: (err as Error).message }]);
  }
  const records = parsed.map(({ record, raw, info }) => {
    // `raw` carries the blank lines skipped before the record and its own line break.
    const body = raw.replace(/^(\r?\n)+/, '').replace(/\r?\n$/, '');
    const spans = body.split('\n').length - 1;
    return { line: info.lines - spans, cells: record };
  });
  const head = records.shift();
  if (!head)
    throw new InputFileError([
      { line: 1, field: 'csv', message: 'the file is empty (a header row is needed)' },
    ]);
  return { header: head.cells.map((h) => h.trim()), records };
}

/**
 * A cell's value (docs/admin-cli.md "CSV batches"). Cells are JSON (`"gold"`, `1042`, `true`,
 * `{"a":1}`); a cell that is not valid JSON is taken as the plain string (`gold`, `2021-04-12`).
 * An empty cell means "absent". To pass a string that reads as JSON (`1042`, `true`), quote it as
 * JSON: `"1042"` (in CSV: `"""1042"""`).
 */
export function decodeCell(raw: string): unknown {
  if (raw.trim() === '') return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/** A cell that must be a string (email, expiration, schemaId, vct): JSON strings are unquoted. */
export function stringCell(raw: string): string | undefined {
  const value = decodeCell(raw);
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : raw.trim();
}

export interface SubjectColumn {
  index: number;
  /** Claim path below credentialSubject (`address.city` → ['address', 'city']). */
  path: string[];
}

export const SUBJECT_PREFIX = 'credentialSubject.';

/** The `credentialSubject.<claim>[.<nested>]` columns of a header, with problems on line 1. */
export function subjectColumns(header: string[]): { columns: SubjectColumn[]; problems: LineProblem[] } {
  const columns: SubjectColumn[] = [];
  const problems: LineProblem[] = [];
  header.forEach((name, index) => {
    if (!name.startsWith(SUBJECT_PREFIX)) return;
    const path = name.slice(SUBJECT_PREFIX.length).split('.');
    if (path.some((p) => p === '')) {
      problems.push({ line: 1, field: name, message: 'an empty claim name' });
      return;
    }
    if ((RESERVED_CLAIMS as readonly string[]).includes(path[0]!)) {
      problems.push({ line: 1, field: name, message: 'reserved claim name, set by the issuer' });
      return;
    }
    columns.push({ index, path });
  });
  const seen = new Set<string>();
  for (const c of columns) {
    const key = c.path.join('.');
    if (seen.has(key))
      problems.push({ line: 1, field: `${SUBJECT_PREFIX}${key}`, message: 'a duplicate column' });
    seen.add(key);
  }
  for (const c of columns) {
    for (const other of columns) {
      if (other !== c && other.path.length > c.path.length && c.path.every((p, i) => other.path[i] === p)) {
        problems.push({
          line: 1,
          field: `${SUBJECT_PREFIX}${c.path.join('.')}`,
          message: `both a value and the parent of ${SUBJECT_PREFIX}${other.path.join('.')}`,
        });
      }
    }
  }
  if (columns.length === 0 && problems.length === 0)
    problems.push({ line: 1, field: 'header', message: `no ${SUBJECT_PREFIX}<claim> column` });
  return { columns, problems };
}

/** Builds a record's credentialSubject from its claim columns; empty cells are left out. */
export function buildSubject(cells: string[], columns: SubjectColumn[]): Record<string, unknown> {
  const subject: Record<string, unknown> = {};
  for (const { index, path } of columns) {
    const value = decodeCell(cells[index] ?? '');
    if (value === undefined) continue;
    let target = subject;
    for (const part of path.slice(0, -1)) {
      const next = target[part];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) target[part] = {};
      target = target[part] as Record<string, unknown>;
    }
    target[path[path.length - 1]!] = value;
  }
  return subject;
}
