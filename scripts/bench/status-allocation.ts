import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';

type Row = { name: string; value: number; unit: string };

/** Whole issuances each process inserts (the slow test inserts 400 each). */
const PER_PROCESS = 1_000;
const ALLOCATE = join(import.meta.dirname, '../../test/fixtures/allocate.ts');

/** One `test/fixtures/allocate.ts` process: ready once it printed `ready`, then `go` on stdin. */
function allocator(file: string, partitionSize: number) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', ALLOCATE, file, String(PER_PROCESS), String(partitionSize)],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  ) as ChildProcessWithoutNullStreams;
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const lines = createInterface({ input: child.stdout });
  const ready = once(lines, 'line');
  const result = (async () => {
    const out: string[] = [];
    for await (const line of lines) out.push(line);
    const [code] =
      child.exitCode === null ? ((await once(child, 'exit')) as [number | null]) : [child.exitCode];
    if (code !== 0) throw new Error(`allocate.ts exited ${code}: ${stderr}`);
    return JSON.parse(out.at(-1)!) as { inserted: number; retries: number };
  })();
  return { child, ready, result };
}

/** Two processes, started at once, inserting PER_PROCESS issuances each into one SQLite file. */
async function twoProcesses(partitionSize: number): Promise<Row[]> {
  const dir = tempDir();
  const file = join(dir, 'issuer.db');
  const store = openSqliteStore(file);
  try {
    const children = [allocator(file, partitionSize), allocator(file, partitionSize)];
    await Promise.all(children.map((c) => c.ready));
    const start = performance.now();
    for (const c of children) c.child.stdin.end('go\n');
    const results = await Promise.all(children.map((c) => c.result));
    const seconds = (performance.now() - start) / 1000;
    const total = 2 * PER_PROCESS;
    const { slots, nonces, rows } = store.db
      .prepare(
        `SELECT COUNT(DISTINCT status_partition || ':' || status_index) AS slots,
                COUNT(DISTINCT revocation_nonce) AS nonces, COUNT(*) AS rows FROM issuances`,
      )
      .get() as { slots: number; nonces: number; rows: number };
    if (rows !== total || slots !== total || nonces !== total)
      throw new Error(`status-allocation bench: ${rows} rows, ${slots} distinct slots, ${nonces} nonces`);
    const label = `status allocation, 2 processes × ${PER_PROCESS.toLocaleString('en-US')}, ${partitionSize.toLocaleString('en-US')}-slot partitions`;
    return [
      { name: `${label}: entries/s`, value: Math.round(total / seconds), unit: '/s' },
      { name: `${label}: retries`, value: results.reduce((n, r) => n + r.retries, 0), unit: '' },
    ];
  } finally {
    await store.close();
    removeDir(dir);
  }
}

/**
 * `npm run bench -- status-allocation` (docs/benchmarks.md "Status allocation"): the slow test's
 * two processes on one SQLite file at its former volume, 1,000 whole issuances each
 * (`signAndRecord`, envelope sealing included), with 64-slot partitions (many filled and opened
 * while both insert) and the default 131,072; it fails unless every slot and nonce is distinct.
 */
export async function benchStatusAllocation(): Promise<Row[]> {
  return [...(await twoProcesses(64)), ...(await twoProcesses(131_072))];
}
