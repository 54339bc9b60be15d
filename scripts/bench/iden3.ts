import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PrivateKey } from '@iden3/js-crypto';
import { generateHolderKeyPair, parseHolderPublicKey } from '../../src/envelope/index.js';
import { BjjSigner } from '../../src/formats/iden3-bjj/bjj-signer.js';
import { MemoizedPoseidonHasher, merklizeCredential } from '../../src/formats/iden3-bjj/core-claim.js';
import { LocalDocumentLoader } from '../../src/formats/iden3-bjj/document-loader.js';
import { Iden3BjjIssuer, type IssueTimings } from '../../src/formats/iden3-bjj/iden3-bjj-issuer.js';
import { defaultMerklizeWorkers } from '../../src/formats/iden3-bjj/merklize-pool.js';
import type { IssueInput, Issuer } from '../../src/formats/issuer.js';
import { IssuerUrls } from '../../src/identity/issuer-identity.js';
import type { IssuancePhase } from '../../src/issuance/issuance-core.js';
import { openSqlite } from '../../src/store/sqlite/database.js';
import { sqliteIden3Store } from '../../src/store/sqlite/index.js';
import { removeDir, startIssuer, tempDir } from '../../test/helpers/issuer.js';
import { holderIden3Did, membershipSchema, SCHEMAS_DIR } from '../../test/unit/formats/iden3-bjj/fixtures.js';
import { referenceMerklize } from '../../test/unit/formats/iden3-bjj/reference-merklize.js';
import { processCpuMs, startBenchServer } from './server.js';

type Row = { name: string; value: number; unit: string };

const _ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const SIGN_SECONDS = 2;
const REFERENCE_SIGN_SECONDS = 2;
const REVOCATIONS = 300;
const ISSUES = 40;
const WARMUP = 5;
const HTTP_CONCURRENCY = 32;
const HTTP_SECONDS = 10;
const SPLIT_ISSUES = 30;
const MERKLIZE_CREDENTIALS = 30;

const round = (value: number, digits: number) => Number(value.toFixed(digits));

function randomFieldElement(): bigint {
  // 31 random bytes: always below the BN254 field order.
  return BigInt(`0x${randomBytes(31).toString('hex')}`);
}

/** Signatures per second over a fixed time, messages drawn beforehand. */
function signsPerSecond(sign: (msg: bigint) => unknown, seconds: number): number {
  const messages = Array.from({ length: 64 }, randomFieldElement);
  let n = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < seconds * 1000) {
    sign(messages[n % messages.length]!);
    n++;
    elapsed = performance.now() - start;
  }
  return n / (elapsed / 1000);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs `one` with `concurrency` in flight until `ms` have passed; returns each run's latency. */
async function inFlight(concurrency: number, ms: number, one: () => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await one();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}

/**
 * CPU time (user + system, all threads) a process has used, from /proc (Linux, USER_HZ = 100);
 * undefined elsewhere. On a shared machine throughput follows the neighbours, CPU per credential not.
 */
// A fresh Iden3 holder per credential: nothing is deduplicated, every request signs a new credential.
let holderSeed = BigInt(Date.now()) * 1000n;
const nextHolderDid = () => holderIden3Did(holderSeed++);

/**
 * In process, the Iden3 issuer alone: signatures (ours vs js-crypto), revocations (tree insert + new
 * state, WAL SQLite file), and issue() one at a time without and with the merklize pool, then with
 * 32 in flight on the pool.
 */
async function benchInProcess(): Promise<Row[]> {
  const sk = randomBytes(32);
  const ours = new BjjSigner(sk);
  ours.sign(1n); // builds the Base8 table outside the timed loop
  const oursRate = signsPerSecond((m) => ours.sign(m), SIGN_SECONDS);
  const reference = new PrivateKey(Uint8Array.from(sk));
  const referenceRate = signsPerSecond((m) => reference.signPoseidon(m), REFERENCE_SIGN_SECONDS);

  const dir = mkdtempSync(join(tmpdir(), 'bench-iden3-'));
  const db = openSqlite(join(dir, 'bench.db'));
  const base = {
    store: sqliteIden3Store(db),
    keysDir: join(dir, 'keys'),
    generateKeyIfMissing: true,
    urls: new IssuerUrls('https://issuer.example'),
    schemasDir: SCHEMAS_DIR,
  };
  const workers = defaultMerklizeWorkers();
  const inline = await Iden3BjjIssuer.open({ ...base, merklizeWorkers: 0 });
  const pooled = workers > 0 ? await Iden3BjjIssuer.open({ ...base, merklizeWorkers: workers }) : undefined;
  try {
    const nonces = Array.from({ length: REVOCATIONS }, () => randomInt(1, 2 ** 47));
    const start = performance.now();
    for (const nonce of nonces) await inline.revoke(nonce);
    const revokeRate = REVOCATIONS / ((performance.now() - start) / 1000);

    const schema = membershipSchema();
    const input = (): IssueInput => ({
      credentialId: randomUUID(),
      holderDid: nextHolderDid(),
      schema,
      claims: {
        givenName: 'Ada',
        familyName: 'Lovelace',
        email: 'ada@example.org',
        memberSince: '2019-03-01',
        tier: 'gold',
        memberNumber: randomInt(1, 1_000_000),
      },
      issuedAt: new Date(),
      expiresAt: new Date(Date.now() + 365 * 86_400_000),
      revocationNonce: randomInt(1, 2 ** 47),
    });
    const sequential = async (issuer: Iden3BjjIssuer, label: string): Promise<Row[]> => {
      for (let i = 0; i < WARMUP; i++) await issuer.issue(input());
      const sum: IssueTimings = { merklizeMs: 0, queueMs: 0, signMs: 0, totalMs: 0 };
      const t0 = performance.now();
      for (let i = 0; i < ISSUES; i++) {
        const { timings } = await issuer.issueWithTimings(input());
        for (const k of Object.keys(sum) as Array<keyof IssueTimings>) sum[k] += timings[k];
      }
      const rate = ISSUES / ((performance.now() - t0) / 1000);
      const per = (v: number) => round(v / ISSUES, 2);
      return [
        {
          name: `iden3: issue() in process, one at a time, ${label}`,
          value: round(rate, 1),
          unit: 'credentials/s',
        },
        { name: `iden3:   merklization (${label})`, value: per(sum.merklizeMs), unit: 'ms/credential' },
        { name: `iden3:   core claim + signing (${label})`, value: per(sum.signMs), unit: 'ms/credential' },
        {
          name: `iden3:   rest: layout, checks, worker messages (${label})`,
          value: per(sum.totalMs - sum.merklizeMs - sum.signMs),
          unit: 'ms/credential',
        },
      ];
    };
    const rows = await sequential(inline, 'no pool');
    if (pooled) {
      rows.push(...(await sequential(pooled, `pool of ${workers}`)));
      const cpu0 = process.cpuUsage();
      const latencies = await inFlight(HTTP_CONCURRENCY, 5000, () => pooled.issue(input()));
      const cpu = process.cpuUsage(cpu0);
      rows.push(
        {
          name: `iden3: issue() in process, ${HTTP_CONCURRENCY} in flight, pool of ${workers}`,
          value: round(latencies.length / 5, 1),
          unit: 'credentials/s',
        },
        {
          name: 'iden3:   CPU (all threads)',
          value: round((cpu.user + cpu.system) / 1000 / latencies.length, 1),
          unit: 'ms/credential',
        },
      );
    }
    return [
      {
        name: 'iden3: BJJ EdDSA-Poseidon signs (ours, @noble/curves)',
        value: round(oursRate, 0),
        unit: 'signs/s',
      },
      {
        name: 'iden3: BJJ EdDSA-Poseidon signs (@iden3/js-crypto)',
        value: round(referenceRate, 1),
        unit: 'signs/s',
      },
      { name: 'iden3: signer speed-up over js-crypto', value: round(oursRate / referenceRate, 1), unit: 'x' },
      {
        name: `iden3: revocation-tree inserts (+ state, SQLite WAL file, ${REVOCATIONS} in a row)`,
        value: round(revokeRate, 0),
        unit: 'revocations/s',
      },
      ...rows,
    ];
  } finally {
    await pooled?.close();
    await inline.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Hosted BJJ issuance in process through the app's own HostedIssuanceService (the real context, claims
 * from SQLite, the bundled emulator), one at a time, with the time of each phase: claim lookup,
 * merklization, signing (core claim + BJJ), envelope, storage (the issuance record) and upload.
 */
async function benchIssuanceSplit(): Promise<Row[]> {
  const dir = tempDir();
  const app = await startIssuer({ dir });
  try {
    const { ctx } = app;
    const iden3 = ctx.iden3;
    if (!iden3) throw new Error('no schema lists BJJ_SIG_2021');
    const totals = new Map<string, number>();
    const add = (k: string, ms: number) => totals.set(k, (totals.get(k) ?? 0) + ms);
    // The service calls issue(); this stand-in calls issueWithTimings() to split merklize / sign.
    const timed: Issuer = {
      proofType: iden3.proofType,
      usesStatusList: iden3.usesStatusList,
      supports: (s) => iden3.supports(s),
      issue: async (input) => {
        const { issued, timings } = await iden3.issueWithTimings(input);
        add('merklize', timings.merklizeMs + timings.queueMs);
        add('bjj', timings.signMs);
        return issued;
      },
    };
    ctx.issuers.set('BJJ_SIG_2021', timed);
    const encryptTo = parseHolderPublicKey(generateHolderKeyPair('x25519').publicKeyHex, 'pubKey');
    const issueOne = () =>
      ctx.hosted.issueHosted({
        holderDid: nextHolderDid(),
        userId: 'demo-user-1',
        schemaId: 'membership-v1',
        proofType: 'BJJ_SIG_2021',
        encryptTo,
      });
    for (let i = 0; i < WARMUP; i++) await issueOne();
    totals.clear();
    ctx.issuance.phaseTimer = (phase: IssuancePhase, ms: number) => add(phase, ms);
    const t0 = performance.now();
    for (let i = 0; i < SPLIT_ISSUES; i++) await issueOne();
    const wall = performance.now() - t0;
    ctx.issuance.phaseTimer = undefined;
    const per = (k: string) => round((totals.get(k) ?? 0) / SPLIT_ISSUES, 2);
    const sign = per('sign');
    const split: Array<[string, number]> = [
      ['claim lookup (SQLite claims provider)', per('claims')],
      ['merklization (incl. pool queue)', per('merklize')],
      ['signing (core claim + BJJ signature)', per('bjj')],
      ['credential layout and checks', round(sign - per('merklize') - per('bjj'), 2)],
      ['envelope (seal to the holder)', per('envelope')],
      ['storage (issuance record, SQLite)', per('record')],
      ['upload to the hosting service (emulator)', per('upload')],
    ];
    return [
      {
        name: 'iden3: hosted issuance in process, one at a time',
        value: round(SPLIT_ISSUES / (wall / 1000), 1),
        unit: 'credentials/s',
      },
      ...split.map(([name, value]) => ({ name: `iden3:   ${name}`, value, unit: 'ms/credential' })),
    ];
  } finally {
    await app.ctx.iden3?.close();
    await app.close();
    removeDir(dir);
  }
}

/**
 * `POST /issue-vc` with `proofType: BJJ_SIG_2021` against the real server in a child process (with
 * the bundled emulator), `HTTP_CONCURRENCY` in flight, a new Iden3 holder per request.
 */
async function benchHttpIssueVcBjj(): Promise<Row[]> {
  const server = await startBenchServer({ RATE_LIMIT_HOLDER_PER_MIN: '0' });
  const { url, apiKey, child } = server;
  try {
    const holder = generateHolderKeyPair('x25519');
    let failures = 0;
    const one = async () => {
      const res = await fetch(`${url}/issue-vc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        body: JSON.stringify({
          holderDID: nextHolderDid(),
          pubKey: holder.publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
          proofType: 'BJJ_SIG_2021',
        }),
      });
      await res.arrayBuffer();
      if (res.status !== 201) failures++;
    };
    await inFlight(HTTP_CONCURRENCY, 3000, one); // warm-up: workers, JIT, hash memo
    failures = 0;
    const cpu0 = processCpuMs(child.pid!);
    const start = performance.now();
    const latencies = await inFlight(HTTP_CONCURRENCY, HTTP_SECONDS * 1000, one);
    const elapsed = (performance.now() - start) / 1000;
    const cpu1 = processCpuMs(child.pid!);
    const cpuRows: Row[] = [];
    if (cpu0 !== undefined && cpu1 !== undefined) {
      const perCredential = (cpu1 - cpu0) / latencies.length;
      const cores = availableParallelism();
      cpuRows.push(
        {
          name: 'iden3: BJJ issue-vc server CPU (all threads)',
          value: round(perCredential, 1),
          unit: 'ms/credential',
        },
        {
          name: `iden3: BJJ issue-vc CPU-bound ceiling on ${cores} idle cores`,
          value: round((cores * 1000) / perCredential, 1),
          unit: '/s',
        },
      );
    }
    return [
      {
        name: `iden3: BJJ issue-vc over HTTP at ${HTTP_CONCURRENCY} in flight`,
        value: round(latencies.length / elapsed, 1),
        unit: '/s',
      },
      { name: 'iden3: BJJ issue-vc p50 latency', value: round(percentile(latencies, 50), 0), unit: 'ms' },
      { name: 'iden3: BJJ issue-vc p99 latency', value: round(percentile(latencies, 99), 0), unit: 'ms' },
      { name: 'iden3: BJJ issue-vc non-201 answers', value: failures, unit: '' },
      ...cpuRows,
    ];
  } finally {
    await server.close();
  }
}

/**
 * Merklization alone, on this thread, one credential at a time: the library path
 * (`@iden3/js-jsonld-merklization` + `@iden3/js-merkletree` + js-crypto Poseidon, the test reference)
 * against the kit's (merklize.ts + poseidon.ts), on the same issued credentials (each a new holder,
 * id, nonce and member number). Both warm up first (JIT, contexts, memos of constant values).
 */
async function benchMerklization(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-mz-'));
  const db = openSqlite(join(dir, 'bench.db'));
  const issuer = await Iden3BjjIssuer.open({
    store: sqliteIden3Store(db),
    keysDir: join(dir, 'keys'),
    generateKeyIfMissing: true,
    urls: new IssuerUrls('https://issuer.example'),
    schemasDir: SCHEMAS_DIR,
    merklizeWorkers: 0,
  });
  try {
    const schema = membershipSchema();
    const loader = new LocalDocumentLoader();
    const block = schema.iden3!;
    loader.registerContext(block.contextUrl, SCHEMAS_DIR, block.contextFile);
    const credentials: Record<string, unknown>[] = [];
    for (let i = 0; i < MERKLIZE_CREDENTIALS + WARMUP; i++) {
      const issued = await issuer.issue({
        credentialId: randomUUID(),
        holderDid: nextHolderDid(),
        schema,
        claims: {
          givenName: 'Ada',
          familyName: 'Lovelace',
          memberSince: '2019-03-01',
          tier: 'gold',
          memberNumber: i + 1,
        },
        issuedAt: new Date(),
        expiresAt: new Date(Date.now() + 365 * 86_400_000),
        revocationNonce: randomInt(1, 2 ** 47),
      });
      credentials.push(issued.credential as Record<string, unknown>);
    }
    const msPer = async (fn: (c: Record<string, unknown>) => Promise<unknown>) => {
      for (const c of credentials.slice(0, WARMUP)) await fn(c);
      const t0 = performance.now();
      for (const c of credentials.slice(WARMUP)) await fn(c);
      return (performance.now() - t0) / MERKLIZE_CREDENTIALS;
    };
    const library = await msPer((c) => referenceMerklize(c, loader.load));
    // A hasher of its own: issue() above merklized these credentials through the default one, whose
    // memo would answer their per-credential hashes too. The warm-up fills it with the constant ones.
    const hasher = new MemoizedPoseidonHasher();
    const ours = await msPer((c) => merklizeCredential(c, loader.load, hasher));
    return [
      {
        name: 'iden3: merklization, library path (js-merkletree, js-crypto)',
        value: round(library, 2),
        unit: 'ms/credential',
      },
      {
        name: 'iden3: merklization, ours (merklize.ts, poseidon.ts)',
        value: round(ours, 2),
        unit: 'ms/credential',
      },
      {
        name: 'iden3: merklization speed-up over the library path',
        value: round(library / ours, 1),
        unit: 'x',
      },
    ];
  } finally {
    await issuer.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * docs/dependencies.md figures for the Iden3 back-end: BabyJubJub signatures (ours vs js-crypto), revocation-tree
 * inserts, issue() in process with its time split, hosted issuance in process split by phase, and
 * BJJ issue-vc over HTTP against the real server.
 */
export async function benchIden3(): Promise<Row[]> {
  return [
    { name: 'iden3: merklize workers (default: one per core)', value: defaultMerklizeWorkers(), unit: '' },
    ...(await benchMerklization()),
    ...(await benchInProcess()),
    ...(await benchIssuanceSplit()),
    ...(await benchHttpIssueVcBjj()),
  ];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const { name, value, unit } of await benchIden3()) console.log(`${name}: ${value} ${unit}`);
}
