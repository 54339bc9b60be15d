import { cpSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';
import { processCpuMs, startBenchServer } from './server.js';

type Row = { name: string; value: number; unit: string };

/** Credentials issued, then renewed by the sweep (BENCH_RENEWAL_COUNT). */
const COUNT = Number(process.env.BENCH_RENEWAL_COUNT || 300);
const IN_FLIGHT = 16;
const SCHEMA = 'renewal-bench-v1';

/**
 * `npm run bench -- renewal` (docs/operations.md "Renewal"): the server's CPU per credential the
 * renewal sweep renews, beside its CPU per direct issuance (`POST /admin/issue-vc`) in the same
 * run. One server child process (development start: the bundled emulator answers initialize-user
 * and stores the uploads in that process, in both phases). The credentials are issued first under
 * a schema without `renewal`; then the file gains `renewal`, a schema reload makes the sweep
 * (every 200 ms) renew them all, and the phase ends when the audit log has every `renew`.
 */
export async function benchRenewal(): Promise<Row[]> {
  const work = tempDir();
  const schemas = join(work, 'schemas');
  cpSync(resolve('schemas'), schemas, { recursive: true });
  const schemaFile = (renewal: boolean) =>
    writeFileSync(
      join(schemas, 'renewal-bench.json'),
      JSON.stringify({
        schemaId: SCHEMA,
        proofTypes: ['SD_JWT_VC'],
        expiresInSeconds: 31_536_000,
        credentialSubject: {
          type: 'object',
          properties: { name: { type: 'string' }, n: { type: 'integer' } },
          required: ['name'],
        },
        claims: { provider: 'sqlite' },
        ...(renewal ? { renewal: { beforeExpirySeconds: 30 * 86_400 } } : {}),
      }),
    );
  schemaFile(false);
  const server = await startBenchServer({
    SCHEMAS_DIR: schemas,
    RATE_LIMIT_ADMIN_PER_MIN: '0',
    RENEWAL_SWEEP_INTERVAL_MS: '200',
  });
  const admin = async (path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-api-key': server.adminApiKey },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (res.status >= 300) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const cpu = () => processCpuMs(server.child.pid!) ?? Number.NaN;
  try {
    for (let from = 0; from < COUNT; from += 500)
      await admin('/admin/claims', {
        records: Array.from({ length: Math.min(500, COUNT - from) }, (_, i) => ({
          userId: `renew-${from + i}`,
          schemaId: SCHEMA,
          claims: { name: `Holder ${from + i}`, n: from + i },
        })),
      });
    const expiration = new Date(Date.now() + 10 * 86_400_000).toISOString();

    const issueStarted = cpu();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        for (let i = next++; i < COUNT; i = next++)
          await admin('/admin/issue-vc', {
            userId: `renewal.bench.${i}@example.org`,
            schemaId: SCHEMA,
            vct: `urn:vct:${SCHEMA}`,
            expiration,
            claimsUserId: `renew-${i}`,
          });
      }),
    );
    const issueCpu = cpu() - issueStarted;

    schemaFile(true);
    const sweepStarted = cpu();
    const wallStarted = performance.now();
    await admin('/admin/schemas/reload', { reason: 'bench' });
    for (;;) {
      const page = (await admin('/admin/audit?action=renew&limit=1&total=true')) as {
        pagination: { total: number };
      };
      if (page.pagination.total >= COUNT) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const sweepCpu = cpu() - sweepStarted;
    const wall = (performance.now() - wallStarted) / 1000;
    const perIssue = issueCpu / COUNT;
    const perRenewal = sweepCpu / COUNT;
    return [
      { name: `renewal: server CPU per direct issuance (${COUNT}, baseline)`, value: perIssue, unit: 'ms' },
      { name: `renewal: server CPU per renewed credential (sweep)`, value: perRenewal, unit: 'ms' },
      { name: 'renewal ÷ direct issuance, server CPU', value: perRenewal / perIssue, unit: '×' },
      { name: `renewal: sweep, ${COUNT} credentials`, value: COUNT / wall, unit: 'credentials/s' },
    ];
  } finally {
    await server.close();
    removeDir(work);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await benchRenewal()) console.log(row);
}
