import { describe, expect, it } from 'vitest';
import type { StatusSlot } from '../../src/store/store.js';
import { allocateThroughSignAndRecord } from '../fixtures/status.js';
import { openTempStore } from '../fixtures/temp-store.js';

// docs/several-instances.md "Storage engines", draft-ietf-oauth-status-list §12.5.1/§13.3: status indexes are drawn at random among
// the free slots of the open partition, never reused and never handed out twice.
describe('status slot allocation', () => {
  it('fills a partition to the last free slot, then opens the next one', async () => {
    const { store } = openTempStore();
    const slots: StatusSlot[] = [];
    for (let n = 0; n < 40; n++)
      slots.push((await allocateThroughSignAndRecord(store.issuances, 16, 2)).slot);
    const byPartition = (p: number) =>
      slots
        .filter((s) => s.partition === p)
        .map((s) => s.index)
        .sort((a, b) => a - b);
    const all16 = Array.from({ length: 16 }, (_, i) => i);
    expect(byPartition(0)).toEqual(all16);
    expect(byPartition(1)).toEqual(all16);
    expect(byPartition(2)).toHaveLength(8);
    expect(new Set(byPartition(2)).size).toBe(8);
    expect((await store.status.listPartitions()).map((p) => [p.partition, p.allocated, p.bits])).toEqual([
      [0, 16, 2],
      [1, 16, 2],
      [2, 8, 2],
    ]);
  });
});
