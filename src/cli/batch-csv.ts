import { ExpirationSchema, type OnDuplicate } from '../issuance/direct-input.js';
import { RecipientEmailSchema } from '../issuance/recipient-email.js';
import {
  buildSubject,
  type LineProblem,
  readCsv,
  SUBJECT_PREFIX,
  stringCell,
  subjectColumns,
} from './csv-input.js';

// The input file of `batch-issue` (docs/admin-cli.md "CSV batches"): one row per recipient.

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
