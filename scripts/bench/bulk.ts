import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type KeyRing, loadKeyRing } from '../../src/keys/key-ring.js';
import { StatusJobs } from '../../src/status/status-jobs.js';
import { StatusService } from '../../src/status/status-service.js';
import { type OpenedStore, openStore, parseDatabaseUrl } from '../../src/store/engines.js';
import { seedIssuances } from '../../test/fixtures/bulk.js';
import { identityOf } from '../../test/fixtures/identity.js';
import { queryStore, removeDir, tempDir } from '../../test/helpers/issuer.js';
import { createTempDatabase } from '../../test/helpers/services.js';

type Row = { name: string; value: number; unit: string };

/** Credentials one bulk job revokes (BENCH_BULK_COUNT); single revocations for the baseline. */
const COUNT = Number(process.env.BENCH_BULK_COUNT || 50_000);
const SINGLES = 500;
const PARTITION_SIZE = 131_072;

/**
 * Bulk revocation (docs/operations.md "Bulk status changes") on each engine: one job over
 * BENCH_BULK_COUNT seeded credentials, run in this process as the server runs it (chunks of
 * 1,000, one transaction each, then every touched partition signed once), against the baseline of
 * the same store revoking one credential at a time (`StatusService.change`, the `/admin/revoke`
 * path) in the same run.
 */
export async function benchBulk(): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = tempDir();
  try {
    const signing = await loadKeyRing(join(dir, 'keys'), { generateIfMissing: true });
    const engines: Array<[string, () => Promise<{ url: string; drop(): Promise<void> }>]> = [
      ['sqlite', async () => ({ url: `sqlite:${join(dir, 'bulk.db')}`, drop: async () => undefined })],
      ['postgres', () => createTempDatabase(process.env.BENCH_DATABASE_URL || undefined)],
    ];
    for (const [name, make] of engines) {
      let database: { url: string; drop(): Promise<void> };
      try {
        database = await make();
      } catch (err) {
        console.log(`  ${name}: skipped (${(err as Error).message})`);
        continue;
      }
      const target = parseDatabaseUrl(database.url, process.cwd());
      if (typeof target === 'string') throw new Error(target);
      const store = await openStore(target, { poolMax: 4 });
      try {
        rows.push(...(await benchEngine(name, store, signing)));
      } finally {
        await store.close();
        await database.drop();
      }
    }
  } finally {
    removeDir(dir);
  }
  return rows;
}

async function benchEngine(name: string, store: OpenedStore, signing: KeyRing): Promise<Row[]> {
  const status = new StatusService({
    identity: identityOf('https://issuer.example', () => signing),
    store: store.status,
    lookup: (nonce) => store.issuances.getByNonce(nonce),
  });
  const jobs = new StatusJobs({ store: store.statusJobs, statusStore: store.status, status });
  await seedIssuances(store, COUNT, { schemaId: 'bulk', partitionSize: PARTITION_SIZE, bits: 1 });
  await seedIssuances(store, SINGLES, { schemaId: 'single', partitionSize: PARTITION_SIZE, bits: 1 });

  const singles = await queryStore<{ revocation_nonce: number }>(
    store,
    "SELECT revocation_nonce FROM issuances WHERE schema_id = 'single'",
  );
  const singleStarted = performance.now();
  for (const s of singles)
    await status.change(Number(s.revocation_nonce), 'revoke', undefined, {
      actor: 'bench',
      reason: 'baseline',
    });
  const singlePerSecond = singles.length / ((performance.now() - singleStarted) / 1000);

  const started = performance.now();
  const job = await jobs.create('revoke', { schemaId: 'bulk' }, { actor: 'bench', reason: 'bench' });
  // `create` starts the run in the background; this waits for that same run.
  const report = await jobs.runLeased(job.id);
  const wall = (performance.now() - started) / 1000;
  if (!report || report.done !== COUNT)
    throw new Error(`bulk bench: the job ended ${JSON.stringify(report)}`);
  const perSecond = COUNT / report.changeSeconds;
  return [
    { name: `${name}: single revocations (baseline)`, value: singlePerSecond, unit: 'credentials/s' },
    { name: `${name}: bulk revoke, ${COUNT} credentials`, value: perSecond, unit: 'credentials/s' },
    { name: `${name}: bulk revoke ÷ single revocations`, value: perSecond / singlePerSecond, unit: '×' },
    {
      name: `${name}: publish at the end (${report.partitions} partition)`,
      value: report.publishSeconds * 1000,
      unit: 'ms',
    },
    { name: `${name}: whole job, create to done`, value: wall, unit: 's' },
  ];
}
