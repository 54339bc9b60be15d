import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { AdminApiError, type AdminClient } from './admin-client.js';
import { buildSubject, readCsv, SUBJECT_PREFIX, stringCell, subjectColumns } from './csv-input.js';
import { type CliIo, json } from './output.js';

export interface ClaimsImportRecord {
  userId: string;
  schemaId: string;
  claims: Record<string, unknown>;
  expiresAt?: string | undefined;
}

/** A problem located by line (CSV) or record number (JSON). */
export interface ImportProblem {
  at: string;
  field: string;
  message: string;
}

/** An ISO 8601 date-time with an offset, or a plain date (midnight UTC), as batch-issue takes. */
const ExpiresAtSchema = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()], {
    error: 'must be an ISO 8601 date-time with an offset, or a date (2027-01-31)',
  })
  .transform((s) => (s.length === 10 ? `${s}T00:00:00Z` : s));

// The format of examples/claims.json; schemaId may come from --schema instead.
const JsonRecordSchema = z.object({
  userId: z.string().min(1),
  schemaId: z.string().min(1).optional(),
  claims: z.record(z.string(), z.unknown()),
  expiresAt: ExpiresAtSchema.optional(),
});

/**
 * Reads a claims file: JSON (an array like examples/claims.json) or CSV (columns `userId`,
 * optional `expiresAt` and `schemaId`, and `credentialSubject.<claim>` cells as in batch-issue).
 */
export function readClaimsFile(
  file: string,
  schema: string | undefined,
): { records: ClaimsImportRecord[]; at: string[]; problems: ImportProblem[] } {
  const text = readFileSync(file, 'utf8');
  return file.toLowerCase().endsWith('.json') ? fromJson(text, schema) : fromCsv(text, schema);
}

function pickSchema(own: string | undefined, option: string | undefined): string | { message: string } {
  if (own && option && own !== option) return { message: `${own} differs from --schema ${option}` };
  return own ?? option ?? { message: 'required (in the file or with --schema)' };
}

function fromJson(text: string, schema: string | undefined) {
  const records: ClaimsImportRecord[] = [];
  const at: string[] = [];
  const problems: ImportProblem[] = [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { records, at, problems: [{ at: 'file', field: 'json', message: (err as Error).message }] };
  }
  if (!Array.isArray(raw))
    return { records, at, problems: [{ at: 'file', field: 'json', message: 'must be an array' }] };
  raw.forEach((item, i) => {
    const where = `record ${i + 1}`;
    const parsed = JsonRecordSchema.safeParse(item);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        problems.push({ at: where, field: issue.path.join('.') || 'record', message: issue.message });
      return;
    }
    const schemaId = pickSchema(parsed.data.schemaId, schema);
    if (typeof schemaId !== 'string') {
      problems.push({ at: where, field: 'schemaId', message: schemaId.message });
      return;
    }
    records.push({ ...parsed.data, schemaId });
    at.push(where);
  });
  return { records, at, problems };
}

function fromCsv(text: string, schema: string | undefined) {
  const records: ClaimsImportRecord[] = [];
  const at: string[] = [];
  const { header, records: rows } = readCsv(text);
  const { columns, problems: headerProblems } = subjectColumns(header);
  const problems: ImportProblem[] = headerProblems.map((p) => ({ at: `line ${p.line}`, ...p }));
  const index = (name: string) => header.indexOf(name);
  for (const name of header) {
    if (!name.startsWith(SUBJECT_PREFIX) && !['userId', 'expiresAt', 'schemaId'].includes(name))
      problems.push({ at: 'line 1', field: name, message: 'unknown column' });
  }
  if (index('userId') < 0)
    problems.push({ at: 'line 1', field: 'userId', message: 'the userId column is missing' });
  if (index('schemaId') < 0 && !schema)
    problems.push({ at: 'line 1', field: 'schemaId', message: 'no schemaId column and no --schema option' });
  if (problems.length > 0) return { records, at, problems };
  for (const { line, cells } of rows) {
    const where = `line ${line}`;
    if (cells.length !== header.length) {
      problems.push({
        at: where,
        field: 'row',
        message: `${cells.length} cells where the header has ${header.length}`,
      });
      continue;
    }
    const cell = (name: string) => (index(name) < 0 ? undefined : stringCell(cells[index(name)]!));
    const userId = cell('userId');
    const expiresCell = cell('expiresAt');
    const expires = expiresCell === undefined ? undefined : ExpiresAtSchema.safeParse(expiresCell);
    const schemaId = pickSchema(cell('schemaId'), schema);
    if (!userId) problems.push({ at: where, field: 'userId', message: 'required' });
    if (typeof schemaId !== 'string')
      problems.push({ at: where, field: 'schemaId', message: schemaId.message });
    if (expires && !expires.success)
      problems.push({ at: where, field: 'expiresAt', message: expires.error.issues[0]!.message });
    if (!userId || typeof schemaId !== 'string' || (expires && !expires.success)) continue;
    records.push({ userId, schemaId, claims: buildSubject(cells, columns), expiresAt: expires?.data });
    at.push(where);
  }
  return { records, at, problems };
}

/** `admin claims import`: checks every record with the server (dry run), then upserts them all. */
export async function runClaimsImport(
  client: AdminClient,
  options: { file: string; schema?: string | undefined; reason?: string | undefined; json: boolean },
  io: CliIo,
): Promise<number> {
  const { records, at, problems } = readClaimsFile(options.file, options.schema);
  if (problems.length === 0 && records.length === 0)
    problems.push({ at: 'file', field: 'records', message: 'no records' });
  const chunks = chunk(records);
  if (problems.length === 0) {
    for (const { start, items } of chunks) {
      try {
        await client.call('POST', '/admin/claims', { body: { records: items, dryRun: true } });
      } catch (err) {
        if (!(err instanceof AdminApiError) || (err.status !== 400 && err.status !== 422)) throw err;
        const issues = (err.details as { issues?: Array<{ field: string; message: string }> } | undefined)
          ?.issues ?? [{ field: 'records', message: err.message }];
        for (const issue of issues) {
          const m = /^records\.(\d+)\.?(.*)$/.exec(issue.field);
          const i = m ? start + Number(m[1]) : undefined;
          problems.push({
            at: i === undefined ? 'file' : at[i]!,
            field: m ? m[2] || 'record' : issue.field,
            message: issue.message,
          });
        }
      }
    }
  }
  if (problems.length > 0) {
    if (options.json) io.out(json({ ok: false, upserted: 0, problems }));
    else {
      for (const line of groupProblems(problems)) io.err(line);
      io.err('nothing was imported');
    }
    return 1;
  }
  let upserted = 0;
  for (const { items } of chunks) {
    const { body } = await client.call<{ upserted: number }>('POST', '/admin/claims', {
      body: { records: items, ...(options.reason ? { reason: options.reason } : {}) },
    });
    upserted += body.upserted;
  }
  if (options.json) io.out(json({ ok: true, upserted }));
  else io.out(`imported ${upserted} claims records`);
  return 0;
}

/** Requests under the server's body limit (100 kb) and record cap (1000). */
function chunk(records: ClaimsImportRecord[]): Array<{ start: number; items: ClaimsImportRecord[] }> {
  const out: Array<{ start: number; items: ClaimsImportRecord[] }> = [];
  let current: { start: number; items: ClaimsImportRecord[] } = { start: 0, items: [] };
  let size = 0;
  records.forEach((r, i) => {
    const bytes = JSON.stringify(r).length + 8;
    if (current.items.length > 0 && (current.items.length >= 500 || size + bytes > 80_000)) {
      out.push(current);
      current = { start: i, items: [] };
      size = 0;
    }
    current.items.push(r);
    size += bytes;
  });
  if (current.items.length > 0) out.push(current);
  return out;
}

/**
 * One line per distinct problem (field and message), naming where it occurs: the same missing
 * value on 51 records is one line, not 51.
 */
export function groupProblems(problems: ImportProblem[]): string[] {
  const groups = new Map<string, { field: string; message: string; at: string[] }>();
  for (const p of problems) {
    const key = `${p.field}\u0000${p.message}`;
    const group = groups.get(key) ?? { field: p.field, message: p.message, at: [] };
    group.at.push(p.at);
    groups.set(key, group);
  }
  return [...groups.values()].map(({ field, message, at }) => {
    const where = at.length > 3 ? `${at.slice(0, 3).join(', ')} and ${at.length - 3} more` : at.join(', ');
    return `${where}: ${field}: ${message}`;
  });
}
