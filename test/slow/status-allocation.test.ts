import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it, onTestFinished } from 'vitest';
import { allocateThroughSignAndRecord } from '../fixtures/status.js';
import { openTempStore, slotsIn } from '../fixtures/temp-store.js';

const ALLOCATE = join(import.meta.dirname, '../fixtures/allocate.ts');

/**
 * Issuances drawn in one partition of 131,072 slots. What the count has to show is a spread and no
 * order, which 2,500 draws show as 10,000 did, with the bounds below scaled to the count (six
 * standard deviations or wider), and random probes meeting slots already taken (about 24 expected
 * at this size), which the allocation passes over (src/store/slot-allocation.ts).
 */
const DRAWS = 2_500;
/**
 * Issuances each of two processes inserts on one SQLite file, both started at once. What has to be
 * shown is that their allocations interleave on the file without a duplicate slot or nonce, and
 * with 64-slot partitions that many partitions fill up and open while both insert (13 here, the
 * last one left with free slots); 400 each show it as 1,000 each did.
 */
const PER_PROCESS = 400;
const TOTAL = 2 * PER_PROCESS;

// docs/several-instances.md "Storage engines", draft-ietf-oauth-status-list §12.5.1/§13.3, at volume: slots drawn at random,
// and several processes on one SQLite file never handing out a slot or a nonce twice. Slow: every
// allocation is a whole `signAndRecord` (envelope sealing included), and each process starts node.
describe('status slot allocation at volume', () => {
  it(`${DRAWS} issuances get distinct indices spread over the partition, not in sequence`, async () => {
    const { store } = openTempStore();
    const size = 131072;
    const indices: number[] = [];
    for (let n = 0; n < DRAWS; n++) {
      const { slot } = await allocateThroughSignAndRecord(store.issuances, size, 1);
      expect(slot.partition).toBe(0);
      indices.push(slot.index);
    }
    expect(new Set(indices).size).toBe(DRAWS);
    expect(slotsIn(store).map((s) => s.index)).toEqual(indices);
    expect(Math.min(...indices)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...indices)).toBeLessThan(size);

    // Spread: 16 equal ranges each hold close to 1/16 of them (expected DRAWS / 16, 156 here, with
    // a standard deviation of sqrt(DRAWS × 1/16 × 15/16), about 12).
    const expected = DRAWS / 16;
    const sd = Math.sqrt(DRAWS * (1 / 16) * (15 / 16));
    const buckets = new Array<number>(16).fill(0);
    for (const i of indices) buckets[Math.floor((i * 16) / size)]! += 1;
    for (const b of buckets) {
      expect(b).toBeGreaterThan(expected - 6 * sd);
      expect(b).toBeLessThan(expected + 6 * sd);
    }
    // Not sequential: consecutive issuances are rarely neighbours (about DRAWS × 3 / size expected,
    // under 0.1 here) or in ascending order (about half of them, within a tenth of the draws).
    let neighbours = 0;
    let ascending = 0;
    for (let n = 1; n < indices.length; n++) {
      if (Math.abs(indices[n]! - indices[n - 1]!) <= 1) neighbours++;
      if (indices[n]! > indices[n - 1]!) ascending++;
    }
    expect(neighbours).toBeLessThan(10);
    expect(ascending).toBeGreaterThan(DRAWS * 0.4);
    expect(ascending).toBeLessThan(DRAWS * 0.6);

    const [partition] = await store.status.listPartitions();
    expect(partition).toMatchObject({ partition: 0, size, bits: 1, allocated: DRAWS });
  });

  function allocator(file: string, count: number, partitionSize: number) {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', ALLOCATE, file, String(count), String(partitionSize)],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    ) as ChildProcessWithoutNullStreams;
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += String(chunk);
    });
    const lines = createInterface({ input: child.stdout });
    const ready = once(lines, 'line');
    const done = (async () => {
      const [code] = (await once(child, 'exit')) as [number | null];
      return code;
    })();
    const result = (async () => {
      const out: string[] = [];
      for await (const line of lines) out.push(line);
      if ((await done) !== 0) throw new Error(`allocate.ts exited ${await done}: ${stderr}`);
      return JSON.parse(out.at(-1)!) as { inserted: number; retries: number };
    })();
    return { child, ready, result };
  }

  it.each([
    { partitionSize: 64, label: 'small partitions (many full partitions and openings)' },
    { partitionSize: 131072, label: 'the default partition size' },
  ])(
    `two processes sharing one SQLite file allocate ${TOTAL} entries with no duplicate: $label`,
    async ({ partitionSize }) => {
      const { store, file } = openTempStore();
      const children = [
        allocator(file, PER_PROCESS, partitionSize),
        allocator(file, PER_PROCESS, partitionSize),
      ];
      await Promise.all(children.map((c) => c.ready));
      for (const c of children) c.child.stdin.end('go\n');
      const results = await Promise.all(children.map((c) => c.result));
      expect(results.map((r) => r.inserted)).toEqual([PER_PROCESS, PER_PROCESS]);

      const slots = slotsIn(store);
      expect(slots).toHaveLength(TOTAL);
      expect(new Set(slots.map((s) => `${s.partition}:${s.index}`)).size).toBe(TOTAL);
      const nonces = store.db
        .prepare('SELECT COUNT(DISTINCT revocation_nonce) AS n FROM issuances')
        .get() as {
        n: number;
      };
      expect(nonces.n).toBe(TOTAL);
      // The partition counters agree with the rows, and only the last partition has free slots.
      const partitions = await store.status.listPartitions();
      const expected = Math.ceil(TOTAL / partitionSize);
      expect(partitions.map((p) => p.partition)).toEqual(Array.from({ length: expected }, (_, i) => i));
      for (const p of partitions) {
        const rows = slots.filter((s) => s.partition === p.partition);
        expect(rows.every((s) => s.index >= 0 && s.index < partitionSize)).toBe(true);
        expect(p.allocated).toBe(rows.length);
        expect(p.allocated).toBe(
          p.partition < expected - 1 ? partitionSize : TOTAL - (expected - 1) * partitionSize,
        );
      }
    },
    // Two child processes doing hundreds of whole issuances each: a minute on a busy 2-core box.
    180_000,
  );
});
