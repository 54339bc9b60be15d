import { randomUUID } from 'node:crypto';
import { statusChangeEvent } from '../../events/builders.js';
import type { NewWebhookEvent } from '../../events/catalogue.js';
import { filledByDatabase } from '../../events/database-filled.js';
import { recordColumns } from '../issuance-row.js';
import { type PartitionColumns, partitionFromRow } from '../status-row.js';
import type {
  AuditActor,
  CredentialStatus,
  IssuanceRecord,
  PartitionRecord,
  PartitionSnapshot,
  StatusChange,
  StatusStore,
} from '../store.js';
import { type PgPool, type Queryable, withTransaction } from './database.js';
import { insertAudit } from './postgres-audit-store.js';
import { insertEventSql } from './postgres-webhook-store.js';
import { type IssuanceRow, rowToIssuance } from './rows.js';

type PartitionRow = PartitionColumns<Date>;

const toPartition = (r: PartitionRow): PartitionRecord => partitionFromRow(r, (d) => d);

// The column is an INTEGER: a larger number from a URL names no partition (rather than an error).
const isPartitionNumber = (n: number) => Number.isInteger(n) && n >= 0 && n <= 0x7fff_ffff;

const PARTITION_SQL = `SELECT p.partition, p.size, p.bits, p.published_at, p.token, p.etag,
    (SELECT COALESCE(SUM(a.allocated), 0)::int FROM status_list_allocations a WHERE a.partition = p.partition) AS allocated
  FROM status_list_partitions p`;

// Revoked is final; revoking twice keeps the first revokedAt.
const CHANGE_SQL: Record<StatusChange, string> = {
  revoke: `status = 1, revoked_at = COALESCE(revoked_at, $2), suspended_at = NULL
    WHERE revocation_nonce = $1 AND status <> 1`,
  suspend: 'status = 2, suspended_at = $2 WHERE revocation_nonce = $1 AND status = 0',
  unsuspend: 'status = 0, suspended_at = NULL WHERE revocation_nonce = $1 AND status = 2',
};

/**
 * Status changes and the partition token cache. A build takes a ticket with its snapshot; every
 * status change clears the ticket and the cached token and bumps the partition's `version`, in the
 * same statement as the change, so no instance can cache a token built from statuses older than
 * a committed change.
 */
export class PostgresStatusStore implements StatusStore {
  constructor(private readonly pool: PgPool) {}

  async getPartition(partition: number): Promise<PartitionRecord | undefined> {
    if (!isPartitionNumber(partition)) return undefined;
    const { rows } = await this.pool.query<PartitionRow>({
      name: 'pg-get-partition',
      text: `${PARTITION_SQL} WHERE p.partition = $1`,
      values: [partition],
    });
    return rows[0] ? toPartition(rows[0]) : undefined;
  }

  async listPartitions(): Promise<PartitionRecord[]> {
    const { rows } = await this.pool.query<PartitionRow>(`${PARTITION_SQL} ORDER BY p.partition`);
    return rows.map(toPartition);
  }

  async snapshotPartition(partition: number): Promise<PartitionSnapshot | undefined> {
    if (!isPartitionNumber(partition)) return undefined;
    return withTransaction(this.pool, async (client) => {
      // The row lock orders this against status changes: a change committed before it is in the
      // statuses read below; one committed after it clears the ticket.
      const { rows } = await client.query<PartitionRow>(
        `${PARTITION_SQL} WHERE p.partition = $1 FOR UPDATE OF p`,
        [partition],
      );
      const row = rows[0];
      if (!row) return undefined;
      const ticket = randomUUID();
      await client.query(
        'UPDATE status_list_partitions SET token = NULL, etag = NULL, build_ticket = $1 WHERE partition = $2',
        [ticket, partition],
      );
      const statuses = await client.query<{ index: number; status: CredentialStatus }>(
        'SELECT status_index AS "index", status FROM issuances WHERE status_partition = $1 AND status <> 0',
        [partition],
      );
      return { record: toPartition(row), statuses: statuses.rows, ticket };
    });
  }

  async savePartitionToken(
    partition: number,
    token: string,
    etag: string,
    publishedAt: Date,
    ticket: string,
    event?: NewWebhookEvent,
  ): Promise<boolean> {
    const save = `UPDATE status_list_partitions SET token = $1, etag = $2, published_at = $3, build_ticket = NULL
       WHERE partition = $4 AND build_ticket = $5 RETURNING partition`;
    if (!event) {
      const { rowCount } = await this.pool.query(save, [token, etag, publishedAt, partition, ticket]);
      return rowCount === 1;
    }
    // The token and its event in one statement, so one transaction.
    const { rows } = await this.pool.query<{ partition: number }>(
      `WITH saved AS (${save}),
         ev AS (${insertEventSql('$6::text', '$7::text', '$8::text', '$3::timestamptz', 'FROM saved WHERE true')})
       SELECT partition FROM saved`,
      [token, etag, publishedAt, partition, ticket, event.id, event.type, event.data],
    );
    return rows.length === 1;
  }

  async changeStatus(
    nonce: number,
    change: StatusChange,
    at: Date,
    audit?: AuditActor,
  ): Promise<IssuanceRecord | undefined> {
    if (!audit) return changeStatusOn(this.pool, nonce, change, at);
    return withTransaction(this.pool, (client) => changeStatusOn(client, nonce, change, at, audit));
  }
}

/**
 * A status change on `q`: the pool, or a client inside a caller's transaction
 * (`PostgresIden3Store.commitIden3State` commits it with the new Iden3 state).
 */
export async function changeStatusOn(
  q: Queryable,
  nonce: number,
  change: StatusChange,
  at: Date,
  audit?: AuditActor,
): Promise<IssuanceRecord | undefined> {
  // One statement, so one transaction: the change, the partition's invalidation, its webhook event
  // (while an endpoint exists), and the record after (the changed row, or the unchanged one when
  // there was nothing to change).
  // unsuspend has no time: an unused parameter would have no type to prepare with.
  const base = change === 'unsuspend' ? [nonce] : [nonce, at];
  const p = (k: number) => `$${base.length + k}`;
  // The changed row's credential id is found by the statement.
  const event = filledByDatabase(
    statusChangeEvent(
      { credentialId: '', revocationNonce: nonce },
      change,
      audit && { actor: audit.actor, reason: audit.reason },
    ),
    'credentialId',
    '',
  );
  const { rows } = await q.query<IssuanceRow & { changed: boolean }>({
    name: `pg-status-${change}`,
    text: `WITH changed AS (UPDATE issuances i SET ${CHANGE_SQL[change]} RETURNING ${recordColumns('i')}),
        invalidated AS (
          UPDATE status_list_partitions SET token = NULL, etag = NULL, build_ticket = NULL, version = version + 1
          WHERE partition = (SELECT status_partition FROM changed)),
        ev AS (${insertEventSql(
          `${p(1)}::text`,
          `${p(2)}::text`,
          `${p(3)}::text || to_json(credential_id)::text || ${p(4)}::text`,
          `${p(5)}::timestamptz`,
          'FROM changed WHERE true',
        )})
        SELECT c.*, e.body AS envelope_body, true AS changed
          FROM changed c LEFT JOIN issuance_envelopes e ON e.credential_id = c.credential_id
        UNION ALL
        SELECT ${recordColumns('i')}, e.body AS envelope_body, false AS changed
          FROM issuances i LEFT JOIN issuance_envelopes e ON e.credential_id = i.credential_id
          WHERE i.revocation_nonce = $1 AND NOT EXISTS (SELECT 1 FROM changed)`,
    values: [...base, event.id, event.type, event.head, event.tail, at],
  });
  const row = rows[0];
  // Recorded only when something changed, in the caller's transaction (`q` is then its client).
  if (row && audit && row.changed)
    await insertAudit(q, { ...audit, at, action: change, target: String(nonce) });
  return row ? rowToIssuance(row) : undefined;
}
