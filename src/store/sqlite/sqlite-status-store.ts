import type {
  CredentialStatus,
  IssuanceRecord,
  PartitionRecord,
  StatusChange,
  StatusStore,
} from '../store.js';
import type { SqliteDatabase } from './database.js';
import { rowToIssuance } from './sqlite-issuance-store.js';

interface PartitionRow {
  partition: number;
  size: number;
  bits: 1 | 2;
  allocated: number;
  published_at: string | null;
  token: string | null;
  etag: string | null;
}

const toPartition = (r: PartitionRow): PartitionRecord => ({
  partition: r.partition,
  size: r.size,
  bits: r.bits,
  allocated: r.allocated,
  publishedAt: r.published_at ? new Date(r.published_at) : null,
  token: r.token,
  etag: r.etag,
});

export class SqliteStatusStore implements StatusStore {
  constructor(private readonly db: SqliteDatabase) {}

  async getPartition(partition: number): Promise<PartitionRecord | undefined> {
    const row = this.db
      .prepare<[number], PartitionRow>('SELECT * FROM status_list_partitions WHERE partition = ?')
      .get(partition);
    return row ? toPartition(row) : undefined;
  }

  async listPartitions(): Promise<PartitionRecord[]> {
    return this.db
      .prepare<[], PartitionRow>('SELECT * FROM status_list_partitions ORDER BY partition')
      .all()
      .map(toPartition);
  }

  async nonZeroStatuses(partition: number): Promise<Array<{ index: number; status: CredentialStatus }>> {
    return this.db
      .prepare<[number], { index: number; status: CredentialStatus }>(
        'SELECT status_index AS "index", status FROM issuances WHERE status_partition = ? AND status != 0',
      )
      .all(partition);
  }

  async savePartitionToken(partition: number, token: string, etag: string, publishedAt: Date): Promise<void> {
    this.db
      .prepare('UPDATE status_list_partitions SET token = ?, etag = ?, published_at = ? WHERE partition = ?')
      .run(token, etag, publishedAt.toISOString(), partition);
  }

  async changeStatus(nonce: number, change: StatusChange, at: Date): Promise<IssuanceRecord | undefined> {
    return this.changeStatusSync(nonce, change, at);
  }

  /** Synchronous core; nests (as a savepoint) inside a caller's open transaction. */
  changeStatusSync(nonce: number, change: StatusChange, at: Date): IssuanceRecord | undefined {
    const tx = this.db.transaction(() => {
      const sql = {
        // Revoked is final; revoking twice keeps the first revokedAt.
        revoke: `UPDATE issuances SET status = 1, revoked_at = COALESCE(revoked_at, @at), suspended_at = NULL
                 WHERE revocation_nonce = @nonce AND status != 1`,
        suspend:
          'UPDATE issuances SET status = 2, suspended_at = @at WHERE revocation_nonce = @nonce AND status = 0',
        unsuspend:
          'UPDATE issuances SET status = 0, suspended_at = NULL WHERE revocation_nonce = @nonce AND status = 2',
      }[change];
      const changed = this.db.prepare(sql).run({ nonce, at: at.toISOString() }).changes;
      const row = this.db.prepare('SELECT * FROM issuances WHERE revocation_nonce = ?').get(nonce) as
        | Parameters<typeof rowToIssuance>[0]
        | undefined;
      if (!row) return undefined;
      if (changed > 0) {
        // Only this partition's cached token is stale; the next GET re-signs it.
        if (row.status_partition !== null) {
          this.db
            .prepare('UPDATE status_list_partitions SET token = NULL, etag = NULL WHERE partition = ?')
            .run(row.status_partition);
        }
      }
      return rowToIssuance(row);
    });
    return this.db.inTransaction ? tx() : tx.immediate();
  }
}
