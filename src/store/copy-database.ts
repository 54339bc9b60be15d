import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { redactDatabaseUrl } from './database-url.js';
import { parseDatabaseUrl } from './engines.js';
import { createPool, migrate, type PgClient, withTransaction } from './postgres/database.js';
import { planMigrations, type SqliteDatabase } from './sqlite/database.js';

/**
 * `npm run admin -- db copy`: a SQLite deployment into an empty PostgreSQL database (docs/several-instances.md
 * "Copying a SQLite deployment"). Every table is mapped explicitly below from both engines'
 * migrations; a table or column either engine has and the map does not name stops the copy.
 */

/** How a column's values travel: SQLite storage → PostgreSQL type, and how both are rendered for the checksum. */
type Kind =
  | 'text' // TEXT → text
  | 'int' // INTEGER → integer / smallint / bigint
  | 'time' // ISO TEXT → timestamptz
  | 'epoch-ms' // INTEGER epoch milliseconds → timestamptz
  | 'blob'; // BLOB → bytea

interface ColumnSpec {
  name: string;
  kind: Kind;
  /** The PostgreSQL expression read for the checksum when the column is not stored as such there. */
  pgRead?: string;
  /** Not a column of the PostgreSQL table (written by `afterInsert`). */
  sqliteOnly?: true;
}

interface TableSpec {
  table: string;
  /** Primary key columns: the checksum's row order. */
  key: string[];
  columns: ColumnSpec[];
  /** Insert order on PostgreSQL when it matters (issuances: `seq` follows SQLite's insertion order). */
  sourceOrder?: string;
  /** A GENERATED ALWAYS identity column copied as is (then its sequence is moved past the max). */
  identity?: string;
  /** PostgreSQL columns the copy leaves to their defaults, and why. */
  pgDefaults?: Record<string, string>;
  /** Rows for PostgreSQL-only tables derived from a copied batch. */
  afterInsert?: (client: PgClient, rows: Row[]) => Promise<void>;
  /** Run once after every row is copied; returns how many rows it added (`added`). */
  afterTable?: (client: PgClient) => Promise<number>;
  /**
   * Rows of the PostgreSQL table that `afterTable` adds and SQLite has no counterpart of: a
   * condition on `t` that no copied row meets, so verification leaves exactly those out.
   */
  added?: { where: string; what: string };
}

type Row = Record<string, unknown>;

const text = (...names: string[]): ColumnSpec[] => names.map((name) => ({ name, kind: 'text' }));
const int = (...names: string[]): ColumnSpec[] => names.map((name) => ({ name, kind: 'int' }));
const time = (...names: string[]): ColumnSpec[] => names.map((name) => ({ name, kind: 'time' }));

export const COPIED_TABLES: TableSpec[] = [
  { table: 'meta', key: ['key'], columns: text('key', 'value') },
  {
    table: 'issuances',
    key: ['credential_id'],
    sourceOrder: 'rowid',
    columns: [
      ...text('credential_id', 'channel', 'user_id', 'holder_did', 'schema_id', 'proof_type'),
      ...int('revocation_nonce', 'status_partition', 'status_index'),
      ...text('subject_hash', 'kid'),
      ...time('created_at', 'expires_at'),
      ...int('status'),
      ...time('revoked_at', 'suspended_at'),
      // `envelope` is retired (migrations 016 and 019): copied as it is, '' on rows since.
      ...text('envelope', 'envelope_sha256', 'upload_state'),
      ...int('upload_attempts'),
      { name: 'next_attempt_at', kind: 'epoch-ms' },
      { name: 'lease_until', kind: 'epoch-ms' },
      ...text('last_error', 'storage_path'),
      ...time('uploaded_at'),
      // Meta (above) carries its HMAC key, so lookups keep working on the copy.
      ...text('email_hash'),
      ...text('batch_id', 'renewed_from'),
    ],
    pgDefaults: { seq: 'generated in SQLite insertion order (rowid), so history paging keeps its order' },
  },
  // The envelopes not yet delivered (pending and failed uploads): the copy's outbox sends them.
  {
    table: 'issuance_envelopes',
    key: ['credential_id'],
    columns: text('credential_id', 'body'),
    pgDefaults: { due_at: "set after the table: the outbox's due time, from its pending issuance" },
    // PostgreSQL's outbox reads the envelopes' rows, not the issuances, so every pending or failed
    // upload needs one: as its migration 023 does, the due time of a pending upload, and a row
    // with a NULL body for an upload that has no envelope on SQLite (one recorded before
    // SQLite's 016 without one, or queued again after its envelope was deleted). The outbox
    // treats it as on SQLite: marked uploaded again when it was delivered once, else failed.
    // A pending upload without a next attempt time (set pending by hand) is due at once.
    afterTable: async (client) => {
      await client.query(
        `UPDATE issuance_envelopes e SET due_at = COALESCE(i.next_attempt_at, now())
         FROM issuances i WHERE i.credential_id = e.credential_id AND i.upload_state = 'pending'`,
      );
      const { rowCount } = await client.query(
        `INSERT INTO issuance_envelopes (credential_id, body, due_at)
         SELECT i.credential_id, NULL, CASE WHEN i.upload_state = 'pending' THEN COALESCE(i.next_attempt_at, now()) END
         FROM issuances i
         WHERE i.upload_state IN ('pending', 'failed')
           AND NOT EXISTS (SELECT 1 FROM issuance_envelopes e WHERE e.credential_id = i.credential_id)`,
      );
      return rowCount ?? 0;
    },
    // SQLite's body is NOT NULL: a NULL one is a row the copy added.
    added: { where: 't.body IS NULL', what: 'uploads without an envelope, for the outbox' },
  },
  {
    table: 'status_list_partitions',
    key: ['partition'],
    columns: [
      ...int('partition', 'size', 'bits'),
      {
        name: 'allocated',
        kind: 'int',
        sqliteOnly: true,
        pgRead:
          '(SELECT COALESCE(SUM(a.allocated), 0) FROM status_list_allocations a WHERE a.partition = t.partition)',
      },
      ...time('created_at', 'published_at'),
      ...text('token', 'etag'),
    ],
    pgDefaults: {
      is_full: 'false: the first scan that finds no free slot sets it',
      version: '0: bumped by the next status change of the partition',
      build_ticket: 'NULL: no token build is running',
    },
    // SQLite counts allocations on the partition row; PostgreSQL spreads them over shard rows.
    afterInsert: async (client, rows) => {
      const counted = rows.filter((r) => Number(r.allocated) > 0);
      if (counted.length === 0) return;
      await insertRows(
        client,
        'status_list_allocations',
        ['partition', 'shard', 'allocated'],
        counted.map((r) => [String(r.partition), '0', String(r.allocated)]),
        false,
      );
    },
  },
  {
    table: 'claims',
    key: ['user_id', 'schema_id'],
    columns: [...text('user_id', 'schema_id', 'claims'), ...time('expires_at', 'updated_at')],
  },
  {
    table: 'idempotency_keys',
    key: ['scope', 'key'],
    columns: [
      ...text('scope', 'key', 'request_hash'),
      ...int('status'),
      ...text('response'),
      ...time('created_at'),
    ],
  },
  {
    table: 'iden3_identity',
    key: ['id'],
    // created_at is TEXT on both engines (the identity code's ISO string, returned as given).
    columns: [...int('id'), ...text('did', 'public_key', 'auth_claim', 'created_at')],
  },
  {
    table: 'iden3_tree_nodes',
    key: ['tree', 'node_key'],
    columns: [
      ...text('tree'),
      { name: 'node_key', kind: 'blob' },
      ...int('node_type'),
      { name: 'node_data', kind: 'blob' },
    ],
  },
  { table: 'iden3_tree_roots', key: ['tree'], columns: [...text('tree'), { name: 'root', kind: 'blob' }] },
  {
    table: 'iden3_states',
    key: ['id'],
    identity: 'id',
    columns: [
      ...int('id'),
      ...text('state', 'claims_tree_root', 'revocation_tree_root', 'roots_tree_root', 'change'),
      ...int('revocation_nonce'),
      ...text('created_at'),
    ],
  },
  {
    table: 'audit_log',
    key: ['id'],
    identity: 'id',
    columns: [...int('id'), ...time('at'), ...text('actor', 'action', 'target', 'reason', 'job_id')],
  },
  {
    table: 'status_jobs',
    key: ['id'],
    columns: [
      ...text('id', 'change', 'selector', 'reason', 'actor', 'state'),
      ...int('total', 'done', 'failed'),
      ...text('cursor', 'lease_owner'),
      { name: 'lease_until', kind: 'epoch-ms' },
      ...text('error'),
      ...int('attempts'),
      ...time('created_at', 'finished_at'),
    ],
  },
  { table: 'status_job_items', key: ['job_id', 'credential_id'], columns: text('job_id', 'credential_id') },
  {
    table: 'compromised_keys',
    key: ['kid'],
    columns: [
      ...text('kid'),
      ...time('at'),
      ...text('actor', 'reason', 'rotated_to', 'job_id'),
      ...int('lists_republished'),
    ],
  },
  {
    table: 'renewals',
    key: ['credential_id'],
    // The recipient stays sealed under KEY_ENCRYPTION_KEY: the copy's server needs the same one to renew.
    columns: [
      ...text('credential_id', 'schema_id'),
      ...time('expires_at'),
      ...text('recipient_sealed', 'claims_user_id', 'outcome', 'renewed_by'),
      ...time('outcome_at'),
      ...text('detail'),
    ],
  },
  {
    table: 'webhook_endpoints',
    key: ['id'],
    // Secrets in clear on SQLite stay so on the copy; an endpoint added on PostgreSQL gets a sealed one.
    columns: [
      ...text('id', 'url', 'events', 'description', 'secret', 'previous_secret'),
      { name: 'previous_until', kind: 'epoch-ms' },
      ...time('created_at'),
    ],
  },
  {
    table: 'webhook_events',
    key: ['seq'],
    identity: 'seq',
    columns: [
      ...int('seq'),
      ...text('id', 'type', 'data'),
      { name: 'created_at', kind: 'epoch-ms' },
      ...int('fanned_out'),
      {
        // SQLite's key for a credential's events (its issuance's created_at); PostgreSQL indexes the id.
        name: 'credential_at',
        kind: 'time',
        sqliteOnly: true,
        pgRead:
          "(SELECT i.created_at FROM issuances i WHERE i.credential_id = t.data::jsonb ->> 'credentialId')",
      },
    ],
  },
  {
    table: 'webhook_deliveries',
    key: ['id'],
    columns: [
      ...text('id'),
      ...int('event_seq'),
      ...text('endpoint_id', 'state'),
      ...int('attempts'),
      { name: 'next_attempt_at', kind: 'epoch-ms' },
      { name: 'lease_until', kind: 'epoch-ms' },
      ...int('last_status'),
      ...text('last_error'),
      ...time('delivered_at', 'created_at'),
    ],
  },
  {
    // Live OpenID4VCI offers: a wallet may take one on the copy. Times are epoch ms on both engines.
    table: 'oid4vci_offers',
    key: ['offer_hash'],
    columns: [
      ...text('offer_hash', 'code_hash', 'schema_id', 'configuration_id', 'user_id', 'email_hash', 'claims'),
      ...text('tx_code_hash'),
      ...int('tx_code_attempts'),
      ...text('state'),
      ...int('expires_at'),
      ...text('token_hash'),
      ...int('token_expires_at'),
      ...text('dpop_jkt', 'credential_id', 'created_by'),
      ...int('created_at'),
    ],
  },
  { table: 'oid4vci_nonces', key: ['nonce'], columns: [...text('nonce'), ...int('expires_at')] },
];

/** PostgreSQL tables SQLite has no counterpart of, and what fills them instead. */
export const POSTGRES_ONLY_TABLES: Record<string, string> = {
  status_list_allocations: 'from status_list_partitions.allocated (one shard row per partition)',
  issuer_keys: 'imported from KEYS_DIR by the first PostgreSQL start (sealed under KEY_ENCRYPTION_KEY)',
  iden3_key:
    "imported from KEYS_DIR/iden3-bjj.json by the first PostgreSQL start (sealed under KEY_ENCRYPTION_KEY); that start refuses a key that is not the copied identity's",
  key_ring_version: "the migration's seed row",
};
/** Tables on both engines that a copy leaves out, and why. */
export const NOT_COPIED_TABLES: Record<string, string> = {
  console_sessions: 'console sign-ins: an operator signs in again on the new database',
  named_locks: 'short leases, nothing to carry over',
  oid4vci_dpop_proofs: 'DPoP proofs seen in the last minutes: kept no longer than a proof is fresh',
  oid4vci_dpop_nonces: 'DPoP nonces live minutes: a wallet given one is given a new one',
};
/** Tables the target must not hold rows in (key_ring_version always holds its seed row). */
const MUST_BE_EMPTY = [
  ...COPIED_TABLES.map((t) => t.table),
  'status_list_allocations',
  'issuer_keys',
  'iden3_key',
  'named_locks',
];
const ENGINE_TABLES = new Set(['schema_migrations', 'sqlite_sequence']);

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

const BATCH_PARAMS = 30_000;

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

async function insertRows(
  client: PgClient,
  table: string,
  columns: string[],
  rows: unknown[][],
  overriding: boolean,
): Promise<void> {
  const perBatch = Math.max(1, Math.floor(BATCH_PARAMS / columns.length));
  for (let start = 0; start < rows.length; start += perBatch) {
    const batch = rows.slice(start, start + perBatch);
    let n = 0;
    const values = batch.map((row) => `(${row.map(() => `$${++n}`).join(', ')})`).join(', ');
    await client.query(
      `INSERT INTO ${table} (${columns.join(', ')}) ${overriding ? 'OVERRIDING SYSTEM VALUE ' : ''}VALUES ${values}`,
      batch.flat(),
    );
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
