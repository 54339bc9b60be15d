import type { PgClient } from './postgres/database.js';

/**
 * The table map of `db copy` (src/store/copy-database.ts): every table of both engines' migrations,
 * copied, PostgreSQL-only or left out, and how each column travels.
 */

/** How a column's values travel: SQLite storage → PostgreSQL type, and how both are rendered for the checksum. */
export type Kind =
  | 'text' // TEXT → text
  | 'int' // INTEGER → integer / smallint / bigint
  | 'time' // ISO TEXT → timestamptz
  | 'epoch-ms' // INTEGER epoch milliseconds → timestamptz
  | 'blob'; // BLOB → bytea

export interface ColumnSpec {
  name: string;
  kind: Kind;
  /** The PostgreSQL expression read for the checksum when the column is not stored as such there. */
  pgRead?: string;
  /** Not a column of the PostgreSQL table (written by `afterInsert`). */
  sqliteOnly?: true;
}

export interface TableSpec {
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

export type Row = Record<string, unknown>;

const text = (...names: string[]): ColumnSpec[] => names.map((name) => ({ name, kind: 'text' }));
const int = (...names: string[]): ColumnSpec[] => names.map((name) => ({ name, kind: 'int' }));
const time = (...names: string[]): ColumnSpec[] => names.map((name) => ({ name, kind: 'time' }));

export const BATCH_PARAMS = 30_000;

/** Inserts `rows` in batches of at most BATCH_PARAMS parameters. */
export async function insertRows(
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
      ...text('grant_type'),
      ...text('transaction_hash'),
      ...int('transaction_expires_at'),
      ...text('holder_jwks'),
      ...int('retry_interval'),
      ...text('pushed_claims', 'notification_hash', 'notification_event'),
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
  oid4vci_authorizations:
    'authorization requests, sign-ins and codes live minutes; a wallet whose refresh token is not carried over signs in again',
};
/** Tables the target must not hold rows in (key_ring_version always holds its seed row). */
export const MUST_BE_EMPTY = [
  ...COPIED_TABLES.map((t) => t.table),
  'status_list_allocations',
  'issuer_keys',
  'iden3_key',
  'named_locks',
];
export const ENGINE_TABLES = new Set(['schema_migrations', 'schema_functions', 'sqlite_sequence']);
