import { readFileSync } from 'node:fs';
import { OPT } from '@iden3/js-crypto';

/**
 * Poseidon over the BN254 scalar field, the same function as `@iden3/js-crypto`'s `poseidon.hash`
 * (the "optimized" form with sparse partial rounds, and its round constants, `OPT`), run in
 * WebAssembly: poseidon.wasm does the permutation in Montgomery form on 32-bit limbs (V8's BigInt
 * multiplication and reduction of 254-bit numbers was the cost). Its source is poseidon.wat, generated
 * by scripts/wasm/poseidon-wat.ts (`npm run build:wasm`); test/unit/formats/iden3-bjj/poseidon.test.ts checks
 * every width 1–16 against js-crypto, and poseidon-wasm.test.ts that the committed files match the
 * source. The module is bundled: nothing is fetched.
 */

/** BN254 scalar field order (js-crypto `Poseidon.F.p`, merklization's prime). */
export const FIELD_ORDER = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

const N_ROUNDS_P = [56, 57, 56, 60, 60, 63, 64, 63, 60, 66, 60, 65, 70, 60, 64, 68] as const;
const SPONGE_INPUTS = 16;
const SPONGE_CHUNK_SIZE = 31;
/** Addresses in the module's memory (scripts/wasm/poseidon-wat.ts `LAYOUT`). */
const STATE = 256;
const CONSTANTS = 2048;
const ELEMENT = 32;
const PAGE = 65536;

interface Constants {
  C: bigint[][];
  S: bigint[][];
  M: bigint[][][];
  P: bigint[][][];
}
// js-crypto exports the parsed table untyped.
const K = OPT as unknown as Constants;

const p = FIELD_ORDER;
const R = 1n << 256n;

// tsconfig's lib has no DOM and @types/node 20 does not declare WebAssembly: the part used here.
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
};

interface PoseidonWasm {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  poseidon(t: number, nP: number, c: number, s: number, m: number, pm: number): void;
}

const wasm = new WebAssembly.Instance(
  new WebAssembly.Module(readFileSync(new URL('./poseidon.wasm', import.meta.url))),
  {},
).exports as unknown as PoseidonWasm;

/** Where one width's constants (Montgomery form) start in memory. */
interface Width {
  c: number;
  s: number;
  m: number;
  p: number;
}

const widths: Array<Width | undefined> = [];
let nextFree = CONSTANTS;

function view(): DataView {
  return new DataView(wasm.memory.buffer);
}

/** Writes `x` (0 ≤ x < 2²⁵⁶) as eight little-endian 32-bit limbs. */
function store(dv: DataView, at: number, x: bigint): void {
  const hex = x.toString(16).padStart(64, '0');
  for (let k = 0; k < 8; k++)
    dv.setUint32(at + 4 * k, Number.parseInt(hex.slice(56 - 8 * k, 64 - 8 * k), 16), true);
}

function load(dv: DataView, at: number): bigint {
  let hex = '0x';
  for (let k = 7; k >= 0; k--)
    hex += dv
      .getUint32(at + 4 * k, true)
      .toString(16)
      .padStart(8, '0');
  return BigInt(hex);
}

/** Lays out width `t`'s constants on first use (Montgomery form: x·R mod p). */
function widthOf(t: number): Width {
  const have = widths[t];
  if (have) return have;
  const groups = [K.C[t - 2]!, K.S[t - 2]!, K.M[t - 2]!.flat(), K.P[t - 2]!.flat()];
  const bytes = groups.reduce((n, g) => n + g.length * ELEMENT, 0);
  const short = nextFree + bytes - wasm.memory.buffer.byteLength;
  if (short > 0) wasm.memory.grow(Math.ceil(short / PAGE));
  const dv = view();
  const starts: number[] = [];
  for (const g of groups) {
    starts.push(nextFree);
    for (const x of g) {
      store(dv, nextFree, (x * R) % p);
      nextFree += ELEMENT;
    }
  }
  const w: Width = { c: starts[0]!, s: starts[1]!, m: starts[2]!, p: starts[3]! };
  widths[t] = w;
  return w;
}

/** Poseidon of 1 to 16 field elements. */
export function poseidonHash(inputs: readonly bigint[]): bigint {
  const n = inputs.length;
  if (n < 1 || n > N_ROUNDS_P.length) throw new Error('Invalid inputs');
  for (const x of inputs) {
    if (x < 0n || x >= p) throw new Error(`One or more inputs are not in the field: ${p}`);
  }
  const t = n + 1;
  const w = widthOf(t);
  const dv = view();
  for (let i = 0; i < n; i++) store(dv, STATE + ELEMENT * (i + 1), inputs[i]!);
  wasm.poseidon(t, N_ROUNDS_P[t - 2]!, w.c, w.s, w.m, w.p);
  return load(dv, STATE);
}

/** Big-endian bytes → integer (js-crypto `ffUtils.beBuff2int`). */
function beInt(bytes: Uint8Array): bigint {
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex === '' ? 0n : BigInt(`0x${hex}`);
}

/**
 * js-crypto `poseidon.hashBytes`: a sponge over 31-byte big-endian chunks, 16 inputs a frame, the
 * previous frame's hash carried in the first input. Empty input gives `undefined` there; here an error.
 */
export function poseidonHashBytes(msg: Uint8Array): bigint {
  const frame: bigint[] = new Array(SPONGE_INPUTS).fill(0n);
  let dirty = false;
  let hash: bigint | undefined;
  let k = 0;
  const full = Math.floor(msg.length / SPONGE_CHUNK_SIZE);
  for (let i = 0; i < full; i++) {
    dirty = true;
    frame[k] = beInt(msg.subarray(SPONGE_CHUNK_SIZE * i, SPONGE_CHUNK_SIZE * (i + 1)));
    if (k === SPONGE_INPUTS - 1) {
      hash = poseidonHash(frame);
      dirty = false;
      frame.fill(0n);
      frame[0] = hash;
      k = 1;
    } else {
      k++;
    }
  }
  if (msg.length % SPONGE_CHUNK_SIZE !== 0) {
    const chunk = new Uint8Array(SPONGE_CHUNK_SIZE);
    chunk.set(msg.subarray(full * SPONGE_CHUNK_SIZE));
    frame[k] = beInt(chunk);
    dirty = true;
  }
  if (dirty) hash = poseidonHash(frame);
  if (hash === undefined) throw new Error('poseidonHashBytes: empty input');
  return hash;
}
