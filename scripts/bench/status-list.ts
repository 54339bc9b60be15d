import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import {
  createHeaderAndPayload,
  StatusList as LibraryStatusList,
  type StatusListJWTHeaderParameters,
} from '@sd-jwt/jwt-status-list';
import type { CryptoKey } from 'jose';
import { generateKeyPair, SignJWT } from 'jose';
import { StatusList, StatusValue, signStatusListToken } from '../../src/status/status-list.js';

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
    { privateKey, kid: 'bench' },
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

/**
 * Build + compress + sign of a 1,000,000-entry 1-bit partition with 1% revoked at random, through
 * our Uint8Array + node:zlib path and through @sd-jwt/jwt-status-list (median of several runs).
 */
export async function benchStatusList(): Promise<Row[]> {
  const { privateKey } = await generateKeyPair('ES256');
  const fast = await measure(ours, RUNS, privateKey);
  const slow = await measure(library, LIBRARY_RUNS, privateKey);
  const round = (value: number, digits: number) => Number(value.toFixed(digits));
  return [
    { name: 'status list 1M/1%: build+compress+sign (median)', value: round(fast.ms, 1), unit: 'ms' },
    { name: 'status list 1M/1%: token size', value: fast.bytes, unit: 'bytes' },
    { name: 'status list 1M/1% via @sd-jwt/jwt-status-list (median)', value: round(slow.ms, 1), unit: 'ms' },
    { name: 'status list 1M/1% via @sd-jwt/jwt-status-list: token size', value: slow.bytes, unit: 'bytes' },
    { name: 'status list 1M/1%: speed-up over the library', value: round(slow.ms / fast.ms, 2), unit: 'x' },
  ];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const { name, value, unit } of await benchStatusList()) console.log(`${name}: ${value} ${unit}`);
}
