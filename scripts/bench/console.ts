import { mkdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { removeDir, startIssuer, TEST_ADMIN_API_KEY, tempDir } from '../../test/helpers/issuer.js';
import type { Row } from './issuance.js';
import { seed, sqliteTarget } from './scale.js';

/**
 * The admin console's pages over a large issuances table.
 * docs/operations.md "The admin console": `BENCH_CONSOLE_ROWS` (default 1,000,000) issuances, one every 5 s up to now (the last
 * 24 hours hold 17,280), recorded on SQLite through the store, then each page served by the real
 * app over HTTP, signed in. Each page's median time to its whole HTML (what the browser paints
 * from: the pages are rendered by the server) beside `GET /healthz` measured the same way in the
 * same run.
 */
const ROWS = Number(process.env.BENCH_CONSOLE_ROWS || 1_000_000);
const SPACING_MS = 5000;
const ROUNDS = 7;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

export async function benchConsole(): Promise<Row[]> {
  const dir = tempDir();
  const now = Date.now();
  try {
    mkdirSync(dir, { recursive: true });
    const target = await sqliteTarget(dir);
    const started = performance.now();
    await seed(target, ROWS, (i) => now - (ROWS - i) * SPACING_MS);
    await target.close();
    process.stdout.write(
      `  (seeded ${ROWS} issuances in ${((performance.now() - started) / 1000).toFixed(1)} s)\n`,
    );
    const issuer = await startIssuer({ dir, exampleClaimsFile: '' });
    try {
      const signIn = await fetch(`${issuer.url}/console/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: issuer.url },
        body: new URLSearchParams({ key: TEST_ADMIN_API_KEY }),
      });
      const cookie = signIn.headers.get('set-cookie')?.split(';')[0];
      if (!cookie) throw new Error(`console sign-in answered ${signIn.status}`);
      const some = (await (
        await fetch(`${issuer.url}/admin/issuance-history?limit=1`, {
          headers: { 'x-admin-api-key': TEST_ADMIN_API_KEY },
        })
      ).json()) as { data: Array<{ credentialId: string; holderDid: string }> };
      const one = some.data[0]!;
      const pages: Array<[string, string]> = [
        ['GET /healthz (baseline)', '/healthz'],
        ['Overview', '/console'],
        ['Issuances, no filter', '/console/issuances'],
        ['Issuances, holder DID', `/console/issuances?holderDid=${encodeURIComponent(one.holderDid)}`],
        ['Issuances, status=revoked', '/console/issuances?status=revoked'],
        [
          'Issuances, channel=direct, last week',
          `/console/issuances?channel=direct&createdFrom=${new Date(now - 7 * 86_400_000).toISOString().slice(0, 10)}`,
        ],
        ['Credential', `/console/credentials/${encodeURIComponent(one.credentialId)}`],
        ['Audit', '/console/audit'],
        ['Keys', '/console/keys'],
        ['Schemas', '/console/schemas'],
      ];
      // One request first: the connection and the page code are warm before anything is timed.
      await (await fetch(`${issuer.url}/console`, { headers: { cookie } })).text();
      const rows: Row[] = [];
      let baseline = 0;
      for (const [name, path] of pages) {
        const times: number[] = [];
        for (let k = 0; k < ROUNDS; k++) {
          const t = performance.now();
          const res = await fetch(`${issuer.url}${path}`, { headers: { cookie } });
          await res.text();
          if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
          times.push(performance.now() - t);
        }
        const value = median(times);
        if (path === '/healthz') baseline = value;
        const label = `console ${ROWS.toLocaleString('en-US')}: ${name}`;
        rows.push({ name: label, value, unit: 'ms' });
        if (path !== '/healthz')
          rows.push({ name: `${label} / healthz`, value: value / Math.max(baseline, 0.001), unit: '×' });
      }
      return rows;
    } finally {
      await issuer.close();
    }
  } finally {
    removeDir(dir);
  }
}
