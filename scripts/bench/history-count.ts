import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchHostedIssueVc } from './hosted.js';
import type { Row } from './issuance.js';
import { seed, sqliteTarget } from './scale.js';

/**
 * Counting beside the holders (docs/benchmarks.md "Counting beside the holders"): SQLite seeded with
 * `BENCH_HISTORY_COUNT_ROWS` issuances (default 3,000,000, through the store as `scale` does), then
 * hosted `POST /issue-vc` p50/p99 at 32 in flight, alone and while an admin client reads page 1 of
 * `GET /admin/issuance-history` (a total over every matching row) again and again, one read at a
 * time, with no filter and with filters. The admin reads' own latency is printed beside.
 */
const ROWS = Number(process.env.BENCH_HISTORY_COUNT_ROWS || 3_000_000);

const READS: Array<[string, string | undefined]> = [
  ['no admin reads', undefined],
  ['page 1, no filter', ''],
  ['page 1, schemaId', 'schemaId=kyc-v1'],
  ['page 1, status=revoked', 'status=revoked'],
  ['page 1, status=valid', 'status=valid'],
  ['page 1, schemaId + proofType=SD_JWT_VC', 'schemaId=kyc-v1&proofType=SD_JWT_VC'],
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

export async function benchHistoryCount(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-history-count-'));
  try {
    const t = await sqliteTarget(dir);
    const started = performance.now();
    await seed(t, ROWS);
    await t.close();
    const label = `history-count SQLite ${ROWS.toLocaleString('en-US')}`;
    process.stdout.write(`  (${label}: seeded in ${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
    for (const [name, query] of READS) {
      const got = await benchHostedIssueVc({
        workers: 1,
        databaseUrl: t.url,
        tag: `${label}: hosted issue-vc, ${name}`,
        // The seeded partitions' shape (scripts/bench/scale.ts).
        env: { STATUS_LIST_BITS: '2', STATUS_LIST_PARTITION_SIZE: '131072' },
        beside:
          query === undefined
            ? undefined
            : async (server) => {
                const times: number[] = [];
                let totals = 0;
                let stopping = false;
                const loop = (async () => {
                  while (!stopping) {
                    const t0 = performance.now();
                    const res = await fetch(`${server.url}/admin/issuance-history?${query}`, {
                      headers: { 'x-admin-api-key': server.adminApiKey },
                    });
                    const body = (await res.json()) as { pagination?: { page?: number; total?: number } };
                    if (
                      res.status !== 200 ||
                      body.pagination?.page !== 1 ||
                      body.pagination.total === undefined
                    )
                      throw new Error(
                        `admin read answered ${res.status}: ${JSON.stringify(body).slice(0, 200)}`,
                      );
                    times.push(performance.now() - t0);
                    totals = body.pagination.total;
                  }
                })();
                return async () => {
                  stopping = true;
                  await loop;
                  return [
                    { name: `${label}: admin ${name}: reads in the window`, value: times.length, unit: '' },
                    {
                      name: `${label}: admin ${name}: read p50 (total ${totals})`,
                      value: median(times),
                      unit: 'ms',
                    },
                  ];
                };
              },
      });
      // Printed as they are taken: a long run keeps what it measured.
      for (const r of got.filter((r) => /p50|p99|issuances\/s|non-201|admin/.test(r.name)))
        console.log(`  ${r.name.padEnd(84)} ${r.value.toFixed(2).padStart(10)} ${r.unit}`);
    }
    return [];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
