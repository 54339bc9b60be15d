import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { deflateSync, inflateSync, type ZlibOptions, constants as zlib } from 'node:zlib';
import {
  createHeaderAndPayload,
  StatusList as LibraryStatusList,
  type StatusListJWTHeaderParameters,
} from '@sd-jwt/jwt-status-list';
import type { CryptoKey } from 'jose';
import { generateKeyPair, SignJWT } from 'jose';
import { StatusList, StatusValue, signStatusListToken } from '../../src/status/status-list.js';
import { allocateThroughSignAndRecord, issueInProcess, seedMembers } from '../../test/fixtures/status.js';
import { removeDir, startIssuer } from '../../test/helpers/issuer.js';

const SIZE = 1_000_000;
const REVOKED = SIZE / 100;
const RUNS = 7;
const LIBRARY_RUNS = 5;
const SUB = 'https://issuer.example/statuslist/0';
const TTL = 300;

type Row = { name: string; value: number; unit: string };

function revokedIndexes(): number[] {
  const picked = new Set<number>();
  while (picked.size < REVOKED) picked.add(randomInt(SIZE));
  return [...picked];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function ours(revoked: number[], privateKey: CryptoKey): Promise<string> {
  const list = new StatusList(SIZE, 1);
  for (const index of revoked) list.set(index, StatusValue.INVALID);
  const iat = Math.floor(Date.now() / 1000);
  return signStatusListToken(
    { sub: SUB, iat, exp: iat + 2 * TTL, ttl: TTL, bits: 1, lst: list.encode() },
    {
      sign: async (data) =>
        Buffer.from(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, privateKey, data)),
      kid: 'bench',
    },
  );
}

async function library(revoked: number[], privateKey: CryptoKey): Promise<string> {
  const list = new LibraryStatusList(new Array<number>(SIZE).fill(0), 1);
  for (const index of revoked) list.setStatus(index, StatusValue.INVALID);
  const iat = Math.floor(Date.now() / 1000);
  const header: StatusListJWTHeaderParameters = { alg: 'ES256', typ: 'statuslist+jwt', kid: 'bench' };
  const { payload } = createHeaderAndPayload(list, { sub: SUB, iat, exp: iat + 2 * TTL, ttl: TTL }, header);
  return new SignJWT(payload).setProtectedHeader(header).sign(privateKey);
}

async function measure(
  build: (revoked: number[], privateKey: CryptoKey) => Promise<string>,
  runs: number,
  privateKey: CryptoKey,
): Promise<{ ms: number; bytes: number }> {
  await build(revokedIndexes(), privateKey); // warm-up: JIT and zlib allocation
  const times: number[] = [];
  let bytes = 0;
  for (let run = 0; run < runs; run++) {
    const revoked = revokedIndexes(); // drawn outside the timed section
    const start = performance.now();
    const token = await build(revoked, privateKey);
    times.push(performance.now() - start);
    bytes = Buffer.byteLength(token);
  }
  return { ms: median(times), bytes };
}

// draft-ietf-oauth-status-list-17 §4.1/§4.2 examples, compressed: what any encoder must reproduce.
const DRAFT_VECTORS = [
  { bytes: 'b9a3', deflated: '78dadbb918000217015d' },
  { bytes: 'c944f9', deflated: '78da3be9f2130003df0207' },
];

const DEFLATE_VARIANTS: Array<{ name: string; options: ZlibOptions }> = [
  { name: 'level 9 (ours)', options: { level: 9 } },
  { name: 'level 9 Z_FILTERED', options: { level: 9, strategy: zlib.Z_FILTERED } },
  { name: 'level 9 Z_FIXED', options: { level: 9, strategy: zlib.Z_FIXED } },
  { name: 'level 9 Z_RLE', options: { level: 9, strategy: zlib.Z_RLE } },
  { name: 'level 9 Z_HUFFMAN_ONLY', options: { level: 9, strategy: zlib.Z_HUFFMAN_ONLY } },
  { name: 'level 9 memLevel 9', options: { level: 9, memLevel: 9 } },
  { name: 'level 9 memLevel 1', options: { level: 9, memLevel: 1 } },
  { name: 'level 9 windowBits 12', options: { level: 9, windowBits: 12 } },
  { name: 'level 9 windowBits 9', options: { level: 9, windowBits: 9 } },
];

/**
 * DEFLATE alone on the 1M/1% list for each zlib variant: median ms, compressed bytes, and whether
 * it reproduces the draft's 1-bit and 2-bit examples byte for byte (Z_RLE and Z_HUFFMAN_ONLY write
 * FLEVEL 0 in the zlib header, a smaller window a different CINFO; Z_FIXED other Huffman codes).
 */
function benchDeflateVariants(): Row[] {
  const lists = Array.from({ length: RUNS }, () => {
    const list = new StatusList(SIZE, 1);
    for (const index of revokedIndexes()) list.set(index, StatusValue.INVALID);
    return list.bytes;
  });
  const rows: Row[] = [];
  for (const { name, options } of DEFLATE_VARIANTS) {
    deflateSync(lists[0]!, options);
    const times: number[] = [];
    let bytes = 0;
    for (const list of lists) {
      const start = performance.now();
      const out = deflateSync(list, options);
      times.push(performance.now() - start);
      bytes = out.length;
      if (!inflateSync(out).equals(list)) throw new Error(`${name} does not round-trip`);
    }
    const exact = DRAFT_VECTORS.every(
      (v) => deflateSync(Buffer.from(v.bytes, 'hex'), options).toString('hex') === v.deflated,
    );
    rows.push(
      { name: `deflate 1M/1% ${name} (median)`, value: round(median(times), 1), unit: 'ms' },
      { name: `deflate 1M/1% ${name}: compressed`, value: bytes, unit: 'bytes' },
      { name: `deflate 1M/1% ${name}: draft examples byte-exact`, value: exact ? 1 : 0, unit: '(1 = yes)' },
    );
  }
  return rows;
}

/**
 * Revoke-to-visible through the real app: POST /admin/revoke, then GET /statuslist/<p> until the
 * list it answers has the bit set (always the first GET: the change drops the cached token), the
 * re-signing included. The partition is filled to 1% revoked first, so the rebuild is realistic.
 */
async function benchRevokeToVisible(partitionSize: number, samples = 21): Promise<Row[]> {
  const issuer = await startIssuer({
    env: { STATUS_LIST_PARTITION_SIZE: String(partitionSize), RATE_LIMIT_ADMIN_PER_MIN: '0' },
  });
  try {
    const { issuances, status } = issuer.ctx.store;
    for (let n = 0; n < partitionSize / 100; n++) {
      const { revocationNonce } = await allocateThroughSignAndRecord(issuances, partitionSize, 1);
      await status.changeStatus(revocationNonce, 'revoke', new Date());
    }
    const users = await seedMembers(issuer, 'bench-revoke', samples);
    const credentials = [];
    for (const user of users) credentials.push(await issueInProcess(issuer, user));
    const times: number[] = [];
    let gets = 0;
    for (const vc of credentials) {
      await (await fetch(vc.uri)).arrayBuffer(); // the cache holds a token without this revoke
      const start = performance.now();
      const res = await issuer.admin('/admin/revoke', { revocationNonce: vc.nonce });
      if (res.status !== 200) throw new Error(`revoke answered ${res.status}`);
      await res.arrayBuffer();
      for (;;) {
        gets++;
        const jwt = await (await fetch(vc.uri)).text();
        const { status_list } = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as {
          status_list: { bits: 1; lst: string };
        };
        if (StatusList.decode(status_list.lst, status_list.bits, partitionSize).get(vc.idx) === 1) break;
      }
      times.push(performance.now() - start);
    }
    const label = `revoke-to-visible, ${partitionSize.toLocaleString('en-US')}-entry partition, 1% revoked`;
    return [
      { name: `${label} (median)`, value: round(median(times), 2), unit: 'ms' },
      { name: `${label}: GETs per revoke`, value: round(gets / credentials.length, 2), unit: '' },
    ];
  } finally {
    await issuer.close();
    removeDir(issuer.dir);
  }
}

const round = (value: number, digits: number) => Number(value.toFixed(digits));

/**
 * Build + compress + sign of a 1,000,000-entry 1-bit partition with 1% revoked at random, through
 * our Uint8Array + node:zlib path and through @sd-jwt/jwt-status-list (median of several runs);
 * zlib variants on the same list; revoke-to-visible latency through the real app.
 */
export async function benchStatusList(): Promise<Row[]> {
  const { privateKey } = await generateKeyPair('ES256');
  const fast = await measure(ours, RUNS, privateKey);
  const slow = await measure(library, LIBRARY_RUNS, privateKey);
  return [
    { name: 'status list 1M/1%: build+compress+sign (median)', value: round(fast.ms, 1), unit: 'ms' },
    { name: 'status list 1M/1%: token size', value: fast.bytes, unit: 'bytes' },
    { name: 'status list 1M/1% via @sd-jwt/jwt-status-list (median)', value: round(slow.ms, 1), unit: 'ms' },
    { name: 'status list 1M/1% via @sd-jwt/jwt-status-list: token size', value: slow.bytes, unit: 'bytes' },
    { name: 'status list 1M/1%: speed-up over the library', value: round(slow.ms / fast.ms, 2), unit: 'x' },
    ...benchDeflateVariants(),
    ...(await benchRevokeToVisible(131072)),
    ...(await benchRevokeToVisible(1_048_576)),
  ];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const { name, value, unit } of await benchStatusList()) console.log(`${name}: ${value} ${unit}`);
}
