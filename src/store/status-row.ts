import type { PartitionRecord } from './store.js';

/**
 * A `status_list_partitions` row as an engine's driver returns it. Both engines share the columns
 * and differ only in how a driver hands back a timestamp (`Time`: ISO text in SQLite, `Date` from pg).
 */
export interface PartitionColumns<Time> {
  partition: number;
  size: number;
  bits: 1 | 2;
  allocated: number;
  published_at: Time | null;
  token: string | null;
  etag: string | null;
}

export function partitionFromRow<Time>(
  r: PartitionColumns<Time>,
  time: (value: Time) => Date,
): PartitionRecord {
  return {
    partition: r.partition,
    size: r.size,
    bits: r.bits,
    allocated: r.allocated,
    publishedAt: r.published_at === null ? null : time(r.published_at),
    token: r.token,
    etag: r.etag,
  };
}
