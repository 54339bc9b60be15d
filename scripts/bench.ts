/**
 * `npm run bench`: speed figures from one run, each next to the raw primitive measured in the
 * same run (docs/benchmarks.md): speed is measured, not asserted. Sections: `npm run bench -- http status`.
 */

import { createTempDatabase } from '../test/helpers/services.js';
import { benchBatch } from './bench/batch.js';
import { benchHostedIssueVc } from './bench/hosted.js';
import { benchIden3 } from './bench/iden3.js';
import { benchHttpIssueVc, benchPrimitives, type Row } from './bench/issuance.js';
import { benchOid4vci } from './bench/oid4vci.js';
import { benchScale } from './bench/scale.js';
import { benchStatusList } from './bench/status-list.js';
import { benchStoreEngines } from './bench/store-engines.js';

const FLOOR_LAYERS = ['', 'express', 'sdjwt', 'store', 'express,sdjwt,store'];
const WEBHOOK_ROUNDS = 2;

const sections: Record<string, () => Promise<Row[]>> = {
  primitives: benchPrimitives,
  hosted: async () => [
    ...(await benchHostedIssueVc({ workers: 1 })),
    ...(await benchHostedIssueVc({ workers: 2 })),
  ],
  // What the parts alone cost in the same shape, and what each of the kit's layers adds.
  floor: async () => {
    const rows: Row[] = [];
    for (const floor of FLOOR_LAYERS) rows.push(...(await benchHostedIssueVc({ workers: 1, floor })));
    return rows;
  },
  // Hosted issue-vc with one webhook endpoint (a receiver answering 204) and without, alternated
  // twice so that a drift of the shared machine falls on both.
  webhooks: async () => {
    const rows: Row[] = [];
    for (let round = 1; round <= WEBHOOK_ROUNDS; round++)
      for (const webhooks of ['off', 'on'] as const) {
        for (const r of await benchHostedIssueVc({ workers: 1, webhooks }))
          rows.push({ ...r, name: r.name.replace(`webhooks ${webhooks}`, `webhooks ${webhooks} #${round}`) });
      }
    return rows;
  },
  http: () => benchHttpIssueVc(),
  // The OpenID4VCI credential endpoint's CPU per credential beside hosted issue-vc's, one server.
  oid4vci: () => benchOid4vci(),
  status: benchStatusList,
  iden3: benchIden3,
  batch: () => benchBatch(),
  store: benchStoreEngines,
  // Admin history pages by cursor as the issuances table grows (BENCH_SCALE_ROWS).
  scale: benchScale,
  // The same hosted run on SQLite and on PostgreSQL, each with one and two processes
  // (WORKERS=2 on PostgreSQL: two instances on one database); BENCH_DATABASE_URL names the server.
  postgres: async () => {
    const rows: Row[] = [];
    for (const workers of [1, 2]) rows.push(...(await benchHostedIssueVc({ workers })));
    for (const workers of [1, 2]) {
      const db = await createTempDatabase(process.env.BENCH_DATABASE_URL || undefined);
      try {
        rows.push(...(await benchHostedIssueVc({ workers, databaseUrl: db.url })));
      } finally {
        await db.drop();
      }
    }
    return rows;
  },
};
const chosen = process.argv.slice(2).filter((a) => a in sections);
const rows: Row[] = [];
for (const name of chosen.length > 0 ? chosen : Object.keys(sections)) {
  process.stdout.write(`${name}…\n`);
  const got = await sections[name]!();
  rows.push(...got);
  for (const r of got) console.log(`  ${r.name.padEnd(58)} ${fmt(r.value).padStart(12)} ${r.unit}`);
}

const get = (prefix: string) => rows.find((r) => r.name.startsWith(prefix))?.value;
const http = get('issue-vc over HTTP');
const stages = ['bare ES256 signs/s', 'SD-JWT VC issues/s', 'envelope seals/s']
  .map((n) => [n, get(n)] as const)
  .filter(([, v]) => v !== undefined);
if (http !== undefined && stages.length > 0) {
  console.log('\nratios (same run)');
  const slowest = stages.reduce((a, b) => (b[1]! < a[1]! ? b : a));
  for (const [name, v] of stages) console.log(`  issue-vc/s ÷ ${name.padEnd(40)} ${(http / v!).toFixed(3)}`);
  console.log(`  issue-vc/s ÷ slowest stage (${slowest[0]}) ${(http / slowest[1]!).toFixed(3)}`);
}

// The ceiling is one bare ES256 signature plus one seal, per credential, on one core.
const es256 = get('bare ES256 signs/s');
const seal = get('envelope seals/s');
const bjj = get('iden3: BJJ issue-vc over HTTP');
if (es256 !== undefined && seal !== undefined) {
  const ceiling = 1 / (1 / es256 + 1 / seal);
  console.log(`\n  ceiling: bare ES256 sign + one seal, one core ${fmt(ceiling).padStart(25)} credentials/s`);
  if (bjj !== undefined) {
    console.log(
      `  BJJ issue-vc/s ÷ ceiling credentials/s (goal ≥ 0.025) ${(bjj / ceiling).toFixed(4).padStart(14)}`,
    );
  }
}
const mzLibrary = get('iden3: merklization, library path');
const mzOurs = get('iden3: merklization, ours');
if (mzLibrary !== undefined && mzOurs !== undefined) {
  console.log(`  merklization ms/credential: library ${fmt(mzLibrary)}, ours ${fmt(mzOurs)}`);
}
const ceilingMs = get('ceiling cost per credential');
if (ceilingMs !== undefined) {
  const hosted = (w: number) =>
    rows.find((r) => r.name === `hosted issue-vc WORKERS=${w}: server CPU per issuance`);
  const rate = (w: number) =>
    rows.find((r) => r.name.startsWith(`hosted issue-vc WORKERS=${w}: issuances/s`));
  if (hosted(1)) {
    console.log('\nhosted SD-JWT (same run; goal ≤ 4×)');
    for (const w of [1, 2]) {
      const cpu = hosted(w);
      if (cpu)
        console.log(
          `  WORKERS=${w}: server CPU per issuance ÷ ceiling cost ${(cpu.value / ceilingMs).toFixed(2)}×`,
        );
    }
    if (rate(1) && rate(2))
      console.log(`  WORKERS=2 ÷ WORKERS=1 issuances/s ${(rate(2)!.value / rate(1)!.value).toFixed(2)}×`);
  }
}

// The floor (scripts/bench/floor-server.ts) and each layer of the kit put back on it.
const floorCpu = (layers: string) =>
  get(`hosted floor, parts alone${layers ? ` + ${layers}` : ''}: server CPU per issuance`);
if (ceilingMs !== undefined && floorCpu('') !== undefined) {
  console.log('\nhosted floor: the parts alone, then with each kit layer (same run; ÷ ceiling cost)');
  const bare = floorCpu('')!;
  for (const layers of FLOOR_LAYERS) {
    const cpu = floorCpu(layers);
    if (cpu === undefined) continue;
    const added = layers ? `  (+${(cpu - bare).toFixed(3)} ms)` : '';
    console.log(
      `  ${(layers ? `+ ${layers}` : 'parts alone').padEnd(26)} ${cpu.toFixed(3)} ms ${(cpu / ceilingMs).toFixed(2).padStart(6)}×${added}`,
    );
  }
  const kit = get('hosted issue-vc WORKERS=1: server CPU per issuance');
  if (kit !== undefined)
    console.log(
      `  ${'the kit (WORKERS=1)'.padEnd(26)} ${kit.toFixed(3)} ms ${(kit / ceilingMs).toFixed(2).padStart(6)}×  (${(kit / bare).toFixed(2)}× the parts alone)`,
    );
}

// What one webhook endpoint adds to the server CPU of a hosted issuance (goal ≤ 0.1 ms).
const webhookCpu = (state: string, round: number) =>
  get(`hosted issue-vc WORKERS=1 webhooks ${state} #${round}: server CPU per issuance`);
if (webhookCpu('on', 1) !== undefined) {
  console.log('\nwebhooks: server CPU per hosted issuance, on − off (same run; goal ≤ 0.1 ms)');
  const added: number[] = [];
  for (let round = 1; round <= WEBHOOK_ROUNDS; round++) {
    const off = webhookCpu('off', round);
    const on = webhookCpu('on', round);
    if (off === undefined || on === undefined) continue;
    added.push(on - off);
    console.log(
      `  round ${round}: off ${off.toFixed(3)} ms, on ${on.toFixed(3)} ms, added ${(on - off).toFixed(3)} ms`,
    );
  }
  if (added.length > 0)
    console.log(
      `  mean added ${(added.reduce((a, b) => a + b, 0) / added.length).toFixed(3).padStart(10)} ms`,
    );
}

function fmt(v: number): string {
  return v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(2);
}

// PostgreSQL's server CPU per hosted issuance next to SQLite's (goal ≤ 1.25×).
const cpuOf = (engine: string, workers: number) =>
  get(`hosted issue-vc${engine} WORKERS=${workers}: server CPU per issuance`);
if (cpuOf(' PostgreSQL', 1) !== undefined && cpuOf('', 1) !== undefined) {
  console.log('\nPostgreSQL ÷ SQLite server CPU per issuance, hosted issue-vc (same run; goal ≤ 1.25×)');
  for (const workers of [1, 2]) {
    const pg = cpuOf(' PostgreSQL', workers);
    const sqlite = cpuOf('', workers);
    if (pg !== undefined && sqlite !== undefined)
      console.log(`  WORKERS=${workers} ${(pg / sqlite).toFixed(2).padStart(10)}×`);
  }
  const pg2 = cpuOf(' PostgreSQL', 2);
  if (pg2 !== undefined)
    console.log(
      `  PostgreSQL WORKERS=2 ÷ SQLite WORKERS=1 ${(pg2 / cpuOf('', 1)!).toFixed(2).padStart(10)}×`,
    );
}
