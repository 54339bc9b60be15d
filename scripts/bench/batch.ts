import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { startBenchServer } from './server.js';

type Row = { name: string; value: number; unit: string };

/**
 * `npm run bench -- batch`: `admin batch-issue` with `rows` CSV rows (one new holder each) against
 * a server child process with the emulator: end-to-end rows/s (CLI start, validation of every
 * row, issuance, result file) and the sending phase alone.
 */
export async function benchBatch(
  options: { rows?: number; concurrency?: number } = {},
): Promise<Array<{ name: string; value: number; unit: string }>> {
  const rows = options.rows ?? 10_000;
  const concurrency = options.concurrency ?? 32;
  const server = await startBenchServer({ RATE_LIMIT_ADMIN_PER_MIN: '0' });
  const { url, adminApiKey, dir } = server;
  try {
    const csv = join(dir, 'batch.csv');
    const lines = [
      'email,expiration,credentialSubject.givenName,credentialSubject.familyName,credentialSubject.memberSince,credentialSubject.tier,credentialSubject.memberNumber',
    ];
    for (let i = 0; i < rows; i++)
      lines.push(`bench.holder.${i}@example.org,2099-01-01T00:00:00Z,Alice,Martin,2021-04-12,gold,${i + 1}`);
    writeFileSync(csv, `${lines.join('\n')}\n`);

    const start = performance.now();
    const cli = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        resolve('scripts/admin.ts'),
        '--json',
        'batch-issue',
        csv,
        '--schema',
        'membership-v1',
        '--vct',
        'https://issuer.example/vct/membership-v1',
        '--concurrency',
        String(concurrency),
      ],
      {
        env: { ...process.env, ISSUER_URL: url, ADMIN_API_KEY: adminApiKey },
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    let stdout = '';
    cli.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    const [code] = (await once(cli, 'exit')) as [number | null];
    const seconds = (performance.now() - start) / 1000;
    if (code !== 0) throw new Error(`batch-issue exited with ${code}: ${stdout.slice(0, 2000)}`);
    const summary = JSON.parse(stdout) as { sent: number; failed: number; rowsPerSecond: number };
    return [
      {
        name: `batch-issue ${rows} rows end to end at ${concurrency} in flight`,
        value: rows / seconds,
        unit: 'rows/s',
      },
      { name: 'batch-issue sending phase', value: summary.rowsPerSecond, unit: 'rows/s' },
      { name: 'batch-issue failed rows', value: summary.failed, unit: '' },
    ] satisfies Row[];
  } finally {
    await server.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await benchBatch()) console.log(row);
}
