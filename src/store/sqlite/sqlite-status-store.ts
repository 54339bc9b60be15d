import { randomUUID } from 'node:crypto';
import { statusChangeEvent } from '../../events/builders.js';
import type { NewWebhookEvent } from '../../events/catalogue.js';
import { RECORD_SELECT } from '../issuance-row.js';
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
import type { SqliteDatabase } from './database.js';
import { SqliteAuditStore } from './sqlite-audit-store.js';
import { rowToIssuance } from './sqlite-issuance-rows.js';
import { SqliteWebhookStore } from './sqlite-webhook-store.js';

type PartitionRow = PartitionColumns<string>;

const toPartition = (r: PartitionRow): PartitionRecord => partitionFromRow(r, (t) => new Date(t));

// While a token is being built, its row holds `token = NULL` and the builder's ticket in `etag`
// (never served: a cached token needs both). Every status change clears `etag`, so the builder
// can tell, when it comes to cache its token, whether the statuses it read are still current.
const TICKET_PREFIX = 'building:';

/** Cache column values of a partition, as read by `getPartition`: a ticket is not an ETag. */
const visible = (r: PartitionRow): PartitionRow =>
  r.etag?.startsWith(TICKET_PREFIX) ? { ...r, etag: null, token: null } : r;

export class SqliteStatusStore implements StatusStore {
  private readonly stmts;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly audit = new SqliteAuditStore(db),
    private readonly webhooks = new SqliteWebhookStore(db),
  ) {
    this.stmts = {
      partition: db.prepare<[number], PartitionRow>(
        'SELECT * FROM status_list_partitions WHERE partition = ?',
      ),
      partitions: db.prepare<[], PartitionRow>('SELECT * FROM status_list_partitions ORDER BY partition'),
      nonZero: db.prepare<[number], { index: number; status: CredentialStatus }>(
        'SELECT status_index AS "index", status FROM issuances WHERE status_partition = ? AND status != 0',
      ),
      claim: db.prepare('UPDATE status_list_partitions SET token = NULL, etag = ? WHERE partition = ?'),
      save: db.prepare(
        'UPDATE status_list_partitions SET token = ?, etag = ?, published_at = ? WHERE partition = ? AND etag = ?',
      ),
      invalidate: db.prepare(
        'UPDATE status_list_partitions SET token = NULL, etag = NULL WHERE partition = ?',
      ),
      byNonce: db.prepare<[number], Parameters<typeof rowToIssuance>[0]>(
        `${RECORD_SELECT} WHERE i.revocation_nonce = ?`,
      ),
      // Revoked is final; revoking twice keeps the first revokedAt.
      revoke: db.prepare(
        `UPDATE issuances SET status = 1, revoked_at = COALESCE(revoked_at, @at), suspended_at = NULL
         WHERE revocation_nonce = @nonce AND status != 1`,
      ),
      suspend: db.prepare(
        'UPDATE issuances SET status = 2, suspended_at = @at WHERE revocation_nonce = @nonce AND status = 0',
      ),
      unsuspend: db.prepare(
        'UPDATE issuances SET status = 0, suspended_at = NULL WHERE revocation_nonce = @nonce AND status = 2',
      ),
    } as const;
  }

  async getPartition(partition: number): Promise<PartitionRecord | undefined> {
    const row = this.stmts.partition.get(partition);
    return row ? toPartition(visible(row)) : undefined;
  }

  async listPartitions(): Promise<PartitionRecord[]> {
    return this.stmts.partitions.all().map((r) => toPartition(visible(r)));
  }

  async snapshotPartition(partition: number): Promise<PartitionSnapshot | undefined> {
    // One write transaction: the statuses read and the ticket taken are the same instant, so any
    // change after it clears the ticket.
    return this.db
      .transaction((): PartitionSnapshot | undefined => {
        const row = this.stmts.partition.get(partition);
        if (!row) return undefined;
        const ticket = `${TICKET_PREFIX}${randomUUID()}`;
        this.stmts.claim.run(ticket, partition);
        return {
          record: toPartition(visible(row)),
          statuses: this.stmts.nonZero.all(partition),
          ticket,
        };
      })
      .immediate();
  }

  async savePartitionToken(
    partition: number,
    token: string,
    etag: string,
    publishedAt: Date,
    ticket: string,
    event?: NewWebhookEvent,
  ): Promise<boolean> {
    const tx = this.db.transaction(() => {
      const saved =
        this.stmts.save.run(token, etag, publishedAt.toISOString(), partition, ticket).changes === 1;
      if (saved && event) this.webhooks.insertEvent(event, publishedAt);
      return saved;
    });
    return this.db.inTransaction ? tx() : tx.immediate();
  }

  async changeStatus(
    nonce: number,
    change: StatusChange,
    at: Date,
    audit?: AuditActor,
  ): Promise<IssuanceRecord | undefined> {
    return this.applyStatusChange(nonce, change, at, audit);
  }

  /**
   * Synchronous core; nests (as a savepoint) inside a caller's open transaction on the same
   * connection (`SqliteIden3Store.commitIden3State`).
   */
  applyStatusChange(
    nonce: number,
    change: StatusChange,
    at: Date,
    audit?: AuditActor,
  ): IssuanceRecord | undefined {
    const tx = this.db.transaction(() => {
      const changed = this.stmts[change].run({ nonce, at: at.toISOString() }).changes;
      const row = this.stmts.byNonce.get(nonce);
      if (!row) return undefined;
      if (audit && changed > 0)
        this.audit.insertAudit({ ...audit, at, action: change, target: String(nonce) });
      if (changed > 0)
        this.webhooks.insertEvent(
          statusChangeEvent({ credentialId: row.credential_id, revocationNonce: nonce }, change, audit),
          at,
        );
      // Only this partition's cached token is stale (and any build in flight); the next GET re-signs.
      if (changed > 0 && row.status_partition !== null) this.stmts.invalidate.run(row.status_partition);
      return rowToIssuance(row);
    });
    return this.db.inTransaction ? tx() : tx.immediate();
  }
}
