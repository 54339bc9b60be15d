import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import {
  BATCH_PARAMS,
  COPIED_TABLES,
  ENGINE_TABLES,
  insertRows,
  type Kind,
  MUST_BE_EMPTY,
  NOT_COPIED_TABLES,
  POSTGRES_ONLY_TABLES,
  type Row,
  type TableSpec,
} from './copy-database-tables.js';
import { redactDatabaseUrl } from './database-url.js';
import { parseDatabaseUrl } from './engines.js';
import { createPool, migrate, type PgClient, withTransaction } from './postgres/database.js';
import { planMigrations, type SqliteDatabase } from './sqlite/database.js';

/**
 * `npm run admin -- db copy`: a SQLite deployment into an empty PostgreSQL database (docs/several-instances.md
 * "Copying a SQLite deployment"). Every table is mapped explicitly (copy-database-tables.ts) from both engines'
 * migrations; a table or column either engine has and the map does not name stops the copy.
 */

export interface TableReport {
  table: string;
  rows: number;
  sha256: string;
  ok: boolean;
  /** What differed, when not ok. */
  problem?: string;
  /** Rows the copy added on PostgreSQL beyond SQLite's (TableSpec `added`), left out of `rows` and `sha256`. */
  added?: { rows: number; what: string };
}

export interface CopyResult {
  source: string;
  target: string;
  tables: TableReport[];
  ok: boolean;
}

export class CopyRefused extends Error {
  override name = 'CopyRefused';
}

/** A table whose rows PostgreSQL did not take (the transaction rolled back); names the table. */
export class CopyFailed extends Error {
  override name = 'CopyFailed';
}

/** Thrown inside the transaction when verification fails, so that it rolls back. */
class VerifyFailed extends Error {
  constructor(readonly tables: TableReport[]) {
    super('verification failed');
  }
}

export async function copyDatabase(
  from: string,
  to: string,
  options: { cwd: string; progress?: (line: string) => void },
): Promise<CopyResult> {
  const source = parseDatabaseUrl(from, options.cwd);
  if (typeof source === 'string') throw new CopyRefused(`--from: ${source}`);
  if (source.kind !== 'sqlite') throw new CopyRefused('--from must be a sqlite:<path> database');
  const target = parseDatabaseUrl(to, options.cwd);
  if (typeof target === 'string') throw new CopyRefused(`--to: ${target}`);
  if (target.kind !== 'postgres') throw new CopyRefused('--to must be a postgres:// database');
  if (source.path === ':memory:' || !existsSync(source.path))
    throw new CopyRefused(`--from: no database at ${source.path}`);

  const db = new Database(source.path, { readonly: true, fileMustExist: true });
  // Bulk statements may rightly run long: no statement bound.
  const pool = createPool(target.url, { poolMax: 1, timeouts: { queryMs: 0 } });
  const result: CopyResult = {
    source: `sqlite:${source.path}`,
    target: redactDatabaseUrl(target.url),
    tables: [],
    ok: false,
  };
  try {
    checkSourceMigrated(db);
    checkSqliteShape(db);
    await migrate(pool);
    await checkPostgresShape(pool);
    // One read transaction on SQLite (a WAL snapshot: a running server's writes after it are not
    // seen) and one write transaction on PostgreSQL, verified before it commits.
    db.exec('BEGIN');
    try {
      result.tables = await withTransaction(pool, async (client) => {
        const added = new Map<string, number>();
        const busy = await nonEmptyTables(client);
        if (busy.length > 0)
          throw new CopyRefused(`--to: the target database is not empty (rows in ${busy.join(', ')})`);
        for (const spec of COPIED_TABLES) {
          try {
            added.set(spec.table, await copyTable(db, client, spec));
          } catch (err) {
            if (err instanceof CopyRefused) throw err;
            throw new CopyFailed(
              `copying ${spec.table} failed (${(err as Error).message}); rolled back, the target database is unchanged`,
            );
          }
          options.progress?.(`copied ${spec.table}`);
        }
        const reports: TableReport[] = [];
        for (const spec of COPIED_TABLES)
          reports.push(await verifyTable(db, client, spec, added.get(spec.table) ?? 0));
        if (reports.some((r) => !r.ok)) throw new VerifyFailed(reports);
        return reports;
      });
      result.ok = true;
    } catch (err) {
      if (!(err instanceof VerifyFailed)) throw err;
      result.tables = err.tables;
    } finally {
      db.exec('COMMIT');
    }
    return result;
  } finally {
    db.close();
    await pool.end();
  }
}

function checkSourceMigrated(db: SqliteDatabase): void {
  const { problems, files } = planMigrations(db);
  if (problems.length > 0) throw new CopyRefused(`--from: ${problems[0]}`);
  const pending = files.filter((f) => f.state === 'pending').map((f) => f.name);
  if (pending.length > 0)
    throw new CopyRefused(
      `--from: the SQLite database has pending migrations (${pending.join(', ')}); run DATABASE_URL=sqlite:… npm run db:migrate (or start the server once) first`,
    );
}

function checkSqliteShape(db: SqliteDatabase): void {
  const tables = (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{
      name: string;
    }>
  ).map((r) => r.name);
  for (const table of tables) {
    if (ENGINE_TABLES.has(table) || table in NOT_COPIED_TABLES) continue;
    const spec = COPIED_TABLES.find((t) => t.table === table);
    if (!spec)
      throw new CopyRefused(`table ${table} of the SQLite database has no PostgreSQL mapping in db copy`);
    const columns = (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map(
      (c) => c.name,
    );
    compareColumns(
      `SQLite ${table}`,
      columns,
      spec.columns.map((c) => c.name),
    );
  }
  for (const spec of COPIED_TABLES)
    if (!tables.includes(spec.table))
      throw new CopyRefused(`table ${spec.table} is missing from the SQLite database`);
}

async function checkPostgresShape(pool: ReturnType<typeof createPool>): Promise<void> {
  const { rows } = await pool.query<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns
     WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  );
  const byTable = new Map<string, string[]>();
  for (const r of rows) byTable.set(r.table_name, [...(byTable.get(r.table_name) ?? []), r.column_name]);
  for (const [table, columns] of byTable) {
    if (ENGINE_TABLES.has(table) || table in POSTGRES_ONLY_TABLES || table in NOT_COPIED_TABLES) continue;
    const spec = COPIED_TABLES.find((t) => t.table === table);
    if (!spec)
      throw new CopyRefused(`table ${table} of the PostgreSQL database has no SQLite mapping in db copy`);
    const expected = [
      ...spec.columns.filter((c) => !c.sqliteOnly).map((c) => c.name),
      ...Object.keys(spec.pgDefaults ?? {}),
    ];
    compareColumns(`PostgreSQL ${table}`, columns, expected);
  }
  for (const spec of COPIED_TABLES)
    if (!byTable.has(spec.table))
      throw new CopyRefused(`table ${spec.table} is missing from the PostgreSQL database`);
}

function compareColumns(where: string, actual: string[], mapped: string[]): void {
  const unmapped = actual.filter((c) => !mapped.includes(c));
  const missing = mapped.filter((c) => !actual.includes(c));
  if (unmapped.length > 0)
    throw new CopyRefused(`${where}: column ${unmapped.join(', ')} has no mapping in db copy`);
  if (missing.length > 0)
    throw new CopyRefused(`${where}: mapped column ${missing.join(', ')} does not exist`);
}

async function nonEmptyTables(client: PgClient): Promise<string[]> {
  const busy: string[] = [];
  for (const table of MUST_BE_EMPTY) {
    const { rows } = await client.query(`SELECT 1 FROM ${table} LIMIT 1`);
    if (rows.length > 0) busy.push(table);
  }
  return busy;
}

/** A SQLite value as the PostgreSQL parameter of its column. */
function toParam(value: unknown, kind: Kind, where: () => string): unknown {
  if (value === null || value === undefined) return null;
  switch (kind) {
    case 'text':
      return String(value);
    case 'int':
      if (typeof value !== 'bigint' && typeof value !== 'number')
        throw new CopyRefused(`${where()}: ${JSON.stringify(value)} is not an integer`);
      return String(value);
    case 'time':
    case 'epoch-ms': {
      const date = new Date(kind === 'time' ? String(value) : Number(value));
      if (Number.isNaN(date.getTime()))
        throw new CopyRefused(`${where()}: ${String(value)} is not a timestamp`);
      return date.toISOString();
    }
    case 'blob':
      if (!Buffer.isBuffer(value)) throw new CopyRefused(`${where()}: not a BLOB`);
      return value;
  }
}

/** Copies one table; returns how many rows its `afterTable` added. */
async function copyTable(db: SqliteDatabase, client: PgClient, spec: TableSpec): Promise<number> {
  const names = spec.columns.map((c) => c.name);
  const written = spec.columns.filter((c) => !c.sqliteOnly);
  const statement = db
    .prepare(
      `SELECT ${names.join(', ')} FROM ${spec.table} ORDER BY ${spec.sourceOrder ?? spec.key.join(', ')}`,
    )
    .safeIntegers(true);
  const perBatch = Math.max(1, Math.floor(BATCH_PARAMS / written.length));
  let batch: Row[] = [];
  const flush = async () => {
    const params = batch.map((row) =>
      written.map((c) =>
        toParam(
          row[c.name],
          c.kind,
          () => `${spec.table}.${c.name} of ${spec.key.map((k) => row[k]).join('/')}`,
        ),
      ),
    );
    await insertRows(
      client,
      spec.table,
      written.map((c) => c.name),
      params,
      spec.identity !== undefined,
    );
    await spec.afterInsert?.(client, batch);
    batch = [];
  };
  // The iterator holds the SQLite connection between batches; nothing else uses it meanwhile.
  for (const row of statement.iterate() as IterableIterator<Row>) {
    batch.push(row);
    if (batch.length >= perBatch) await flush();
  }
  if (batch.length > 0) await flush();
  if (spec.identity)
    await client.query(
      `SELECT setval(pg_get_serial_sequence('${spec.table}', '${spec.identity}'), COALESCE(MAX(${spec.identity}), 0) + 1, false) FROM ${spec.table}`,
    );
  return (await spec.afterTable?.(client)) ?? 0;
}

/**
 * One row as the checksum sees it, the same from either engine: integers as decimal strings,
 * timestamps as ISO 8601 UTC with milliseconds, BLOBs as hex, NULL as JSON null.
 */
export function canonicalRow(values: unknown[], kinds: Kind[]): string {
  return `${JSON.stringify(
    values.map((v, i) => {
      if (v === null || v === undefined) return null;
      switch (kinds[i]) {
        case 'int':
          return String(v);
        case 'time':
          return new Date(v instanceof Date ? v : String(v)).toISOString();
        case 'epoch-ms':
          return new Date(v instanceof Date ? v : Number(v)).toISOString();
        case 'blob':
          return Buffer.from(v as Uint8Array).toString('hex');
        default:
          return String(v);
      }
    }),
  )}\n`;
}

async function verifyTable(
  db: SqliteDatabase,
  client: PgClient,
  spec: TableSpec,
  added: number,
): Promise<TableReport> {
  const kinds = spec.columns.map((c) => c.kind);
  const sqliteHash = createHash('sha256');
  let sqliteRows = 0;
  const order = spec.key.join(', ');
  for (const row of db
    .prepare(`SELECT ${spec.columns.map((c) => c.name).join(', ')} FROM ${spec.table} ORDER BY ${order}`)
    .raw(true)
    .safeIntegers(true)
    .iterate() as IterableIterator<unknown[]>) {
    sqliteHash.update(canonicalRow(row, kinds));
    sqliteRows++;
  }
  // Text keys in byte order ("C"), as SQLite's BINARY collation sorts them.
  const pgOrder = spec.key
    .map((k) => (spec.columns.find((c) => c.name === k)?.kind === 'text' ? `t.${k} COLLATE "C"` : `t.${k}`))
    .join(', ');
  const select = spec.columns.map((c) => c.pgRead ?? `t.${c.name}`).join(', ');
  const copied = spec.added ? `WHERE NOT (${spec.added.where})` : '';
  await client.query(
    `DECLARE copy_verify NO SCROLL CURSOR FOR SELECT ${select} FROM ${spec.table} t ${copied} ORDER BY ${pgOrder}`,
  );
  const pgHash = createHash('sha256');
  let pgRows = 0;
  for (;;) {
    const { rows } = await client.query({ text: 'FETCH 1000 FROM copy_verify', rowMode: 'array' });
    for (const row of rows as unknown[][]) pgHash.update(canonicalRow(row, kinds));
    pgRows += rows.length;
    if (rows.length < 1000) break;
  }
  await client.query('CLOSE copy_verify');
  const a = sqliteHash.digest('hex');
  const b = pgHash.digest('hex');
  const problems: string[] = [];
  if (sqliteRows !== pgRows) problems.push(`SQLite ${sqliteRows} rows, PostgreSQL ${pgRows}`);
  if (a !== b) problems.push(`sha256 SQLite ${a}, PostgreSQL ${b}`);
  if (spec.added) {
    // The rows left out above are exactly the ones the copy added: no other row may hide there.
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${spec.table} t WHERE ${spec.added.where}`,
    );
    const left = rows[0]?.n ?? 0;
    if (left !== added)
      problems.push(`PostgreSQL ${left} rows where ${spec.added.where}, the copy added ${added}`);
  }
  return {
    table: spec.table,
    rows: pgRows,
    sha256: b,
    ok: problems.length === 0,
    ...(problems.length > 0 ? { problem: problems.join('; ') } : {}),
    ...(spec.added && added > 0 ? { added: { rows: added, what: spec.added.what } } : {}),
  };
}

/** `table: N rows, sha256 …, ok` (or `MISMATCH: …`), then any rows added on PostgreSQL. */
export function reportLine(r: TableReport): string {
  const line = `${r.table}: ${r.rows} rows, sha256 ${r.sha256}, ${r.ok ? 'ok' : `MISMATCH: ${r.problem}`}`;
  return r.added ? `${line}; ${r.added.rows} added (${r.added.what})` : line;
}
