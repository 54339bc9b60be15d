import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { seedSqliteBulk } from './bulk-seed.js';
import { benchHostedIssueVc } from './hosted.js';
import type { Row } from './issuance.js';
import type { BenchServer } from './server.js';

/**
 * Counting beside the holders (docs/benchmarks.md "Counting beside the holders"): SQLite seeded with
 * `BENCH_HISTORY_COUNT_ROWS` issuances (default 3,000,000, one every 10 s up to now, built by SQL:
 * scripts/bench/bulk-seed.ts), then, for each admin read, the issuer started on that database and
 * hosted `POST /issue-vc` at 32 in flight in {@link ROUNDS} rounds of two windows: alone, then
 * while an admin client reads page 1 of `GET /admin/issuance-history` (a total over every matching
 * row) again and again, one read at a time. Printed: each window's figures as they come, then per
 * read the median over the rounds of the holders' p50 and p99 alone and beside, the ratio of the
 * p99s, and the admin reads' median.
 */
const ROWS = Number(process.env.BENCH_HISTORY_COUNT_ROWS || 3_000_000);
const ROUNDS = 3;

const READS: Array<[string, string]> = [
  ['no filter', ''],
  ['schemaId', 'schemaId=kyc-v1'],
  ['status=revoked', 'status=revoked'],
  ['status=valid', 'status=valid'],
  ['schemaId + proofType=SD_JWT_VC', 'schemaId=kyc-v1&proofType=SD_JWT_VC'],
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** The admin client: page 1 with its total, one read after another until told to stop. */
function adminReads(query: string, times: number[], totals: number[]) {
  return async (server: BenchServer) => {
    let stopping = false;
    const loop = (async () => {
      while (!stopping) {
        const t0 = performance.now();
        const res = await fetch(`${server.url}/admin/issuance-history?${query}`, {
          headers: { 'x-admin-api-key': server.adminApiKey },
        });
        const body = (await res.json()) as { pagination?: { page?: number; total?: number } };
        if (res.status !== 200 || body.pagination?.page !== 1 || body.pagination.total === undefined)
          throw new Error(`admin read answered ${res.status}: ${JSON.stringify(body).slice(0, 200)}`);
        times.push(performance.now() - t0);
        totals.push(body.pagination.total);
      }
    })();
    // A failed read rejects the stop below; until then it must not end the process unhandled.
    loop.catch(() => undefined);
    return async (): Promise<Row[]> => {
      stopping = true;
      await loop;
      return [];
    };
  };
}

export async function benchHistoryCount(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-history-count-'));
  try {
    const file = join(dir, 'issuer.db');
    const store = openSqliteStore(file);
    const started = performance.now();
    await seedSqliteBulk(store, ROWS, { endMs: Date.now(), stepMs: 10_000 });
    await store.close();
    // One key folder for every run: the database keeps the Iden3 identity of the first.
    const keysDir = join(dir, 'keys');
    const label = `history-count SQLite ${ROWS.toLocaleString('en-US')}`;
    process.stdout.write(`  (${label}: seeded in ${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
    const summary: string[] = [];
    for (const [name, query] of READS) {
      const times: number[] = [];
      const totals: number[] = [];
      const tag = `${label}: ${name}`;
      const got = await benchHostedIssueVc({
        workers: 1,
        databaseUrl: `sqlite:${file}`,
        keysDir,
        tag,
        // The seeded partitions' shape (scripts/bench/bulk-seed.ts).
        env: { STATUS_LIST_BITS: '2', STATUS_LIST_PARTITION_SIZE: '131072' },
        beside: adminReads(query, times, totals),
        besideRounds: ROUNDS,
      });
      // Printed as they are taken: a long run keeps what it measured.
      for (const r of got) console.log(`  ${r.name.padEnd(84)} ${r.value.toFixed(2).padStart(10)} ${r.unit}`);
      const of = (state: string, figure: string) =>
        median(
          got
            .filter((r) => r.name.startsWith(`${tag} ${state} #`) && r.name.endsWith(figure))
            .map((r) => r.value),
        );
      const [p50a, p50b, p99a, p99b] = [
        of('alone', 'p50 latency'),
        of('beside', 'p50 latency'),
        of('alone', 'p99 latency'),
        of('beside', 'p99 latency'),
      ];
      summary.push(
        `| ${name} | ${totals.at(-1)?.toLocaleString('en-US')} | ${p50a.toFixed(0)} | ${p50b.toFixed(0)} | ${p99a.toFixed(0)} | ${p99b.toFixed(0)} | ${(p99b / p99a).toFixed(2)}× | ${median(times).toFixed(0)} ms (${times.length}) |`,
      );
    }
    console.log(
      `\n  ${label}, medians of ${ROUNDS} rounds, holders' latency in ms\n` +
        '| admin read (page 1 with its total) | total | p50 alone | p50 beside | p99 alone | p99 beside | p99 beside ÷ alone | admin read median (reads) |\n|---|---|---|---|---|---|---|---|\n' +
        summary.join('\n'),
    );
    return [];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
