/**
 * `npm run bench`: speed figures from one run, each next to the raw primitive measured in the
 * same run (docs/benchmarks.md): speed is measured, not asserted. Sections: `npm run bench -- http status`.
 */

import { createTempDatabase } from '../test/helpers/services.js';
import { benchBatch } from './bench/batch.js';
import { benchBulk } from './bench/bulk.js';
import { benchBulkCrash } from './bench/bulk-crash.js';
import { benchCliStart } from './bench/cli-start.js';
import { benchConsole } from './bench/console.js';
import { benchHistoryCount } from './bench/history-count.js';
import { benchHostedIssueVc } from './bench/hosted.js';
import { benchIden3 } from './bench/iden3.js';
import { benchHttpIssueVc, benchPrimitives, type Row } from './bench/issuance.js';
import { benchKeySigning } from './bench/key-signing.js';
import { benchMerklizeEquivalence } from './bench/merklize-equivalence.js';
import { benchOid4vci } from './bench/oid4vci.js';
import { benchOid4vciAuthorizationCode } from './bench/oid4vci-auth-code.js';
import { benchPinning } from './bench/pinning.js';
import { benchRenewal } from './bench/renewal.js';
import { benchScale } from './bench/scale.js';
import { benchSeams } from './bench/seams.js';
import { benchStatusAllocation } from './bench/status-allocation.js';
import { benchStatusList } from './bench/status-list.js';
import { benchStoreEngines } from './bench/store-engines.js';
import { benchTenants } from './bench/tenants.js';
import { benchWebhookParts } from './bench/webhooks.js';

const FLOOR_LAYERS = ['', 'express', 'sdjwt', 'store', 'express,sdjwt,store'];
const WEBHOOK_ROUNDS = Number(process.env.BENCH_WEBHOOK_ROUNDS || 4);
// Four rounds: on the shared machine one pair's throughput moves by more than the token costs.
const KEY_ROUNDS = 4;

const rows: Row[] = [];
const FLOOR = 'hosted floor, parts alone';
/** The floor in this run (the parts alone, scripts/bench/floor-server.ts), measured once. */
async function floorOnce(): Promise<Row[]> {
  return rows.some((r) => r.name.startsWith(`${FLOOR}:`))
    ? []
    : benchHostedIssueVc({ workers: 1, floor: '' });
}

const sections: Record<string, () => Promise<Row[]>> = {
  primitives: benchPrimitives,
  // Every hosted figure is read against the floor measured in the same run.
  hosted: async () => [
    ...(await floorOnce()),
    ...(await benchHostedIssueVc({ workers: 1 })),
    ...(await benchHostedIssueVc({ workers: 2 })),
  ],
  // What the parts alone cost in the same shape, and what each of the kit's layers adds.
  floor: async () => {
    const rows: Row[] = [...(await floorOnce())];
    for (const floor of FLOOR_LAYERS.filter(Boolean))
      rows.push(...(await benchHostedIssueVc({ workers: 1, floor })));
    return rows;
  },
  // The webhook path's parts measured alone, then hosted issue-vc without and with one webhook
  // endpoint (a receiver answering 204) in one issuer, windows alternated so that a drift of the
  // shared machine falls on both; sweeps every 250 ms so that a window's deliveries follow it
  // closely (docs/benchmarks.md "Webhooks").
  webhooks: async () => [
    ...(await floorOnce()),
    ...(await benchWebhookParts()),
    ...(await benchHostedIssueVc({
      workers: 1,
      webhookRounds: WEBHOOK_ROUNDS,
      env: { OUTBOX_SWEEP_MS: '250' },
    })),
  ],
  // Hosted issue-vc with the keys in software and in a PKCS#11 token (SoftHSM2), alternated twice
  // so that a drift of the shared machine falls on both (docs/benchmarks.md "Key backends").
  keys: async () => {
    // One signature alone first (software and token, 32 in flight), then whole issuances.
    const rows: Row[] = await benchKeySigning();
    for (let round = 1; round <= KEY_ROUNDS; round++)
      for (const keyBackend of ['software', 'pkcs11'] as const) {
        for (const r of await benchHostedIssueVc({ workers: 1, keyBackend }))
          rows.push({ ...r, name: r.name.replace(`keys ${keyBackend}`, `keys ${keyBackend} #${round}`) });
      }
    return rows;
  },
  http: () => benchHttpIssueVc(),
  // The OpenID4VCI credential endpoint's CPU per credential beside hosted issue-vc's, one server;
  // then the authorization code flow's whole CPU per credential beside the pre-authorized flow's.
  oid4vci: async () => [...(await benchOid4vci()), ...(await benchOid4vciAuthorizationCode())],
  status: benchStatusList,
  // Two processes inserting 1,000 whole issuances each into one SQLite file (the slow test's 400, at volume).
  'status-allocation': benchStatusAllocation,
  iden3: benchIden3,
  // The merklization equivalence test's check over BENCH_MERKLIZE_CREDENTIALS generated credentials.
  'merklize-equivalence': benchMerklizeEquivalence,
  batch: () => benchBatch(),
  // A bulk revocation job on each engine against single revocations (BENCH_BULK_COUNT).
  bulk: benchBulk,
  // The same job over BENCH_BULK_CRASH_COUNT credentials (default 100,000) in a server process
  // SIGKILLed half-way and taken over by a second one, on each engine.
  'bulk-crash': benchBulkCrash,
  // The renewal sweep's server CPU per renewed credential beside a direct issuance's (BENCH_RENEWAL_COUNT).
  renewal: benchRenewal,
  store: benchStoreEngines,
  // How long `npm run admin -- --version` takes to answer.
  cli: benchCliStart,
  // Admin history pages by cursor as the issuances table grows (BENCH_SCALE_ROWS).
  scale: benchScale,
  // Hosted issue-vc p99 while an admin reads page 1 (with its total) of BENCH_HISTORY_COUNT_ROWS issuances.
  'history-count': benchHistoryCount,
  // Hosted issue-vc on PostgreSQL, this checkout beside the commit before the shape work
  // (BENCH_SEAMS_BASE), alternated in one run: server and backend CPU per issuance, head ÷ base.
  seams: benchSeams,
  // BENCH_TENANTS (1,000) tenants in one TENANCY=multi process: start-up, memory per tenant, hosted
  // issue-vc spread over them beside a single deployment (server CPU per issuance, multi ÷ single),
  // and a tenant added until its first issuance is answered.
  tenants: benchTenants,
  // The admin console's pages over BENCH_CONSOLE_ROWS issuances (default a million), beside /healthz.
  console: benchConsole,
  // The same hosted run on SQLite and on PostgreSQL, each with one and two processes
  // (WORKERS=2 on PostgreSQL: two instances on one database); BENCH_DATABASE_URL names the server.
  postgres: async () => {
    const rows: Row[] = [...(await floorOnce())];
    for (const workers of [1, 2])
      rows.push(...(await benchHostedIssueVc({ workers, tag: `hosted issue-vc SQLite WORKERS=${workers}` })));
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
const pinning = benchPinning();
console.log(pinning.describe);
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
const floorCpu = (layers: string) => get(`${FLOOR}${layers ? ` + ${layers}` : ''}: server CPU per issuance`);
const bare = floorCpu('');
const ratio = (v: number, base: number | undefined) =>
  base === undefined ? '' : `${(v / base).toFixed(2).padStart(6)}×`;

// The floor (scripts/bench/floor-server.ts): what it is made of, what its parts cost in this run.
if (bare !== undefined) {
  const es256Ms = es256 !== undefined ? ` (${(1000 / es256).toFixed(3)} ms in process)` : '';
  const sealMs = seal !== undefined ? ` (${(1000 / seal).toFixed(3)} ms in process)` : '';
  console.log(
    `\nthe floor (same run): ${bare.toFixed(3)} ms server CPU per hosted issuance, the parts alone:`,
  );
  for (const part of [
    'node:http in, the API key compared in constant time',
    'one claims lookup and one upload through undici (keep-alive pools)',
    `one bare ES256 JWT${es256Ms}`,
    `one X25519 envelope seal${sealMs}`,
    'two SQLite writes: the record holding the envelope, then its "uploaded" mark',
  ])
    console.log(`  - ${part}`);
  const p99 = get(`${FLOOR}: p99 latency`);
  const perS = get(`${FLOOR}: issuances/s`);
  if (p99 !== undefined && perS !== undefined)
    console.log(`  floor: ${fmt(perS)} issuances/s, p99 ${p99.toFixed(1)} ms at 32 in flight`);
  if (ceilingMs !== undefined)
    console.log(
      `  floor ÷ ceiling (bare ES256 sign + one seal, ${ceilingMs.toFixed(3)} ms) ${ratio(bare, ceilingMs)}`,
    );
  const layered = FLOOR_LAYERS.filter((l) => l && floorCpu(l) !== undefined);
  if (layered.length > 0) {
    console.log('\nthe floor with each kit layer put back (same run; ÷ floor)');
    for (const layers of layered) {
      const cpu = floorCpu(layers)!;
      console.log(
        `  + ${layers.padEnd(24)} ${cpu.toFixed(3)} ms ${ratio(cpu, bare)}  (+${(cpu - bare).toFixed(3)} ms)`,
      );
    }
  }
}

// Every hosted run of this bench, server CPU per issuance beside the floor.
const hostedRuns = rows.filter(
  (r) => r.name.startsWith('hosted issue-vc') && r.name.endsWith(': server CPU per issuance'),
);
if (hostedRuns.length > 0) {
  console.log(
    `\nhosted SD-JWT, each beside the floor (same run; ${pinning.issuer ? 'issuer pinned' : 'not pinned'})`,
  );
  for (const r of hostedRuns) {
    const tag = r.name.replace(': server CPU per issuance', '');
    const withBackends = get(`${tag}: server + backend CPU per issuance`);
    const backends = get(`${tag}: PostgreSQL backend CPU per issuance`);
    const p99 = get(`${tag}: p99 latency`);
    console.log(
      `  ${tag.replace('hosted issue-vc', '').trim().padEnd(30)} ${r.value.toFixed(3)} ms ${ratio(r.value, bare)} floor` +
        (ceilingMs !== undefined ? ` ${ratio(r.value, ceilingMs)} ceiling` : '') +
        (p99 !== undefined ? `   p99 ${p99.toFixed(1)} ms` : '') +
        (withBackends !== undefined && backends !== undefined
          ? `   + backends ${backends.toFixed(3)} ms = ${withBackends.toFixed(3)} ms ${ratio(withBackends, bare)} floor`
          : ''),
    );
  }
  const rate = (w: number) => get(`hosted issue-vc WORKERS=${w}: issuances/s`);
  if (rate(1) && rate(2))
    console.log(`  WORKERS=2 ÷ WORKERS=1 issuances/s ${(rate(2)! / rate(1)!).toFixed(2)}×`);
}

// What the p99 is made of (scripts/bench/loop-probe.mjs): how long the issuer's event loop was
// held at once, and its GC pauses, in the measured window of each one-process run.
const tails = rows.filter((r) => r.name.endsWith(': event-loop delay p99'));
if (tails.length > 0) {
  console.log('\nthe tail: event-loop stalls and GC pauses in the measured window (same run)');
  for (const r of tails) {
    const tag = r.name.replace(': event-loop delay p99', '');
    const f = (what: string, digits = 2) => get(`${tag}: ${what}`)?.toFixed(digits) ?? '?';
    console.log(
      `  ${tag.padEnd(36)} p99 ${f('p99 latency', 1)} ms; loop delay p99 ${f('event-loop delay p99')} ms, max ${f('event-loop delay max')} ms;` +
        ` GC ${f('GC pauses per issuance', 3)} ms per issuance (${f('GC pause share of the window', 1)}% of the window, ${f('GC pauses, count per second', 0)}/s, max ${f('GC pause max')} ms)`,
    );
  }
}

// What one webhook endpoint adds to the server CPU of a hosted issuance (goal ≤ 0.1 ms), beside
// the floor of the same run.
const webhookCpu = (state: string, round: number) =>
  get(`hosted issue-vc WORKERS=1 webhooks ${state} #${round}: server CPU per issuance`);
let webhookAdded: number | undefined;
if (webhookCpu('on', 1) !== undefined) {
  console.log(
    `\nwebhooks: server CPU per hosted issuance, on − off, one issuer (same run; goal ≤ 0.1 ms)${bare !== undefined ? `; the floor ${bare.toFixed(3)} ms` : ''}`,
  );
  const added: number[] = [];
  for (let round = 1; round <= WEBHOOK_ROUNDS; round++) {
    const off = webhookCpu('off', round);
    const on = webhookCpu('on', round);
    if (off === undefined || on === undefined) continue;
    added.push(on - off);
    console.log(
      `  round ${round}: off ${off.toFixed(3)} ms ${ratio(off, bare)} floor, on ${on.toFixed(3)} ms ${ratio(on, bare)} floor, added ${(on - off).toFixed(3)} ms${bare !== undefined ? ` (${((on - off) / bare).toFixed(2)}× the floor)` : ''}`,
    );
  }
  if (added.length > 0) {
    const sorted = [...added].sort((a, b) => a - b);
    const median =
      sorted.length % 2 === 1
        ? sorted[(sorted.length - 1) / 2]!
        : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
    console.log(
      `  median added ${median.toFixed(3)} ms (spread ${sorted[0]!.toFixed(3)} to ${sorted[sorted.length - 1]!.toFixed(3)} ms)`,
    );
    webhookAdded = median;
  }
  // What the goal's own terms require per hosted issuance (two events, each one signed POST), and
  // what the kit adds beyond that, both measured in process in this run (docs/benchmarks.md).
  const required = get('webhook required parts per hosted issuance (2 events)');
  const own = get("webhook parts per hosted issuance beyond the required ones (the kit's own)");
  if (required !== undefined && own !== undefined)
    console.log(
      `  in process (same run): the required parts alone (HMAC + one POST per event) ${required.toFixed(3)} ms per hosted issuance${bare !== undefined ? ` (${(required / bare).toFixed(2)}× the floor)` : ''}${required > 0.1 ? ', above the goal by themselves on this machine' : ''}; the kit's own webhook work beyond them ${own.toFixed(3)} ms${bare !== undefined ? ` (${(own / bare).toFixed(2)}× the floor)` : ''}`,
    );
}

function fmt(v: number): string {
  return v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(2);
}

// The goals of docs/benchmarks.md "A fair bench", each from this run.
const goals: Array<[string, number | undefined, string, (v: number) => boolean, string]> = [];
const kit1 = get('hosted issue-vc WORKERS=1: server CPU per issuance');
if (kit1 !== undefined && bare !== undefined)
  goals.push(['server CPU per hosted SD-JWT issuance ÷ floor', kit1 / bare, '×', (v) => v <= 1.5, '≤ 1.5×']);
const p99 = get('hosted issue-vc WORKERS=1: p99 latency');
if (p99 !== undefined)
  goals.push([
    `hosted p99 at 32 in flight, WORKERS=1${pinning.issuer ? ', issuer on its own CPU' : ' (not pinned)'}`,
    p99,
    'ms',
    (v) => v < 50,
    '< 50 ms',
  ]);
const pgBackend = get('hosted issue-vc PostgreSQL WORKERS=1: PostgreSQL backend CPU per issuance');
if (pgBackend !== undefined)
  goals.push(['PostgreSQL backend CPU per hosted issuance', pgBackend, 'ms', (v) => v <= 0.5, '≤ 0.5 ms']);
const pgTotal = get('hosted issue-vc PostgreSQL WORKERS=1: server + backend CPU per issuance');
// The SQLite run of the same section when there is one (measured next to the PostgreSQL run).
const sqlite1 = get('hosted issue-vc SQLite WORKERS=1: server CPU per issuance') ?? kit1;
if (pgTotal !== undefined && sqlite1 !== undefined)
  goals.push([
    'PostgreSQL ÷ SQLite, issuer + backend CPU, WORKERS=1',
    pgTotal / sqlite1,
    '×',
    (v) => v <= 1.25,
    '≤ 1.25×',
  ]);
if (webhookAdded !== undefined)
  goals.push([
    'one webhook endpoint: added server CPU per hosted issuance (median)',
    webhookAdded,
    'ms',
    (v) => v <= 0.1,
    '≤ 0.1 ms',
  ]);
const cliStart = get('admin CLI start');
if (cliStart !== undefined)
  goals.push(['admin CLI start (`npm run admin -- --version`)', cliStart, 'ms', (v) => v < 300, '< 300 ms']);
if (goals.length > 0) {
  console.log('\ngoals (same run)');
  for (const [name, v, unit, met, goal] of goals)
    console.log(
      `  ${name.padEnd(62)} ${v!.toFixed(unit === 'ms' && v! >= 10 ? 0 : 2).padStart(8)} ${unit.padEnd(3)} goal ${goal.padEnd(8)} ${met(v!) ? 'met' : 'NOT met'}`,
    );
}

// docs/benchmarks.md "Key backends": what signing in the token adds per hosted issuance, and the
// throughput at 32 in flight against the software key, per round (goal: ≤ +0.15 ms, within 10%).
const keyRow = (backend: string, round: number, what: string) =>
  rows.find((r) => r.name === `hosted issue-vc WORKERS=1 keys ${backend} #${round}: ${what}`)?.value;
const signRow = (backend: string, round: number) =>
  rows.find((r) => r.name === `ES256 signature, ${backend} key #${round}: CPU per signature`)?.value;
if (keyRow('software', 1, 'server CPU per issuance') !== undefined) {
  for (const round of [1, 2]) {
    const [soft, token] = [signRow('software', round), signRow('pkcs11', round)];
    if (soft !== undefined && token !== undefined)
      console.log(
        `\n  one ES256 signature, round ${round}: software ${soft.toFixed(3)} ms, pkcs11 ${token.toFixed(3)} ms CPU (+${(token - soft).toFixed(3)} ms)`,
      );
  }
  console.log(
    '\nkey backends, hosted issue-vc WORKERS=1 (same run; goals: ≤ +0.15 ms CPU, throughput ≥ 0.90×)',
  );
  for (let round = 1; round <= KEY_ROUNDS; round++) {
    const cpu = [
      keyRow('software', round, 'server CPU per issuance'),
      keyRow('pkcs11', round, 'server CPU per issuance'),
    ];
    const rate = [
      keyRow('software', round, 'issuances/s at 32 in flight'),
      keyRow('pkcs11', round, 'issuances/s at 32 in flight'),
    ];
    if (cpu[0] === undefined || cpu[1] === undefined || rate[0] === undefined || rate[1] === undefined)
      continue;
    const [added, ratio] = [cpu[1] - cpu[0], rate[1] / rate[0]];
    console.log(
      `  round ${round}: issuances/s at 32 in flight software ${fmt(rate[0])}, pkcs11 ${fmt(rate[1])}: ${ratio.toFixed(2)}× (${ratio >= 0.9 ? 'met' : 'NOT met'})`,
    );
    console.log(
      `           server CPU per issuance software ${cpu[0].toFixed(3)} ms, pkcs11 ${cpu[1].toFixed(3)} ms: ${added >= 0 ? '+' : ''}${added.toFixed(3)} ms (${added <= 0.15 ? 'met' : 'NOT met'})`,
    );
  }
  const ratios: number[] = [];
  const offMain: [number, number][] = [];
  for (let round = 1; round <= KEY_ROUNDS; round++) {
    const rate = [
      keyRow('software', round, 'issuances/s at 32 in flight'),
      keyRow('pkcs11', round, 'issuances/s at 32 in flight'),
    ];
    if (rate[0] !== undefined && rate[1] !== undefined) ratios.push(rate[1] / rate[0]);
    const off = [
      keyRow('software', round, 'server CPU off the main thread per issuance'),
      keyRow('pkcs11', round, 'server CPU off the main thread per issuance'),
    ];
    if (off[0] !== undefined && off[1] !== undefined) offMain.push([off[0], off[1]]);
  }
  if (ratios.length > 0) {
    ratios.sort((a, b) => a - b);
    const median =
      (ratios[Math.floor((ratios.length - 1) / 2)]! + ratios[Math.floor(ratios.length / 2)]!) / 2;
    console.log(
      `  median of ${ratios.length} rounds: issuances/s pkcs11 ÷ software ${median.toFixed(2)}× (${median >= 0.9 ? 'met' : 'NOT met'})`,
    );
  }
  for (const [soft, token] of offMain)
    console.log(
      `  server CPU off the main thread per issuance: software ${soft.toFixed(3)} ms, pkcs11 ${token.toFixed(3)} ms`,
    );
  const sessions = get('ES256 signature, pkcs11: PKCS#11 sessions open');
  if (sessions !== undefined)
    console.log(`  PKCS#11 sessions the pool opened for 32 signatures in flight: ${sessions} (at most 32)`);
}
