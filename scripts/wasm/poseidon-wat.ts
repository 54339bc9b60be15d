import wabtInit from 'wabt';

/**
 * The WebAssembly text of src/formats/iden3-bjj/poseidon.wasm: Poseidon's permutation (js-crypto's
 * optimized form, the same steps as the BigInt version it replaced) over BN254 in Montgomery form,
 * eight 32-bit limbs held in i64 (a limb product plus two limbs fits 64 bits). The loops are written
 * below as text; only the limb arithmetic (`$mul`, `$add`) is unrolled by this generator.
 * `npm run build:wasm` writes the .wat and its .wasm; test/unit/formats/iden3-bjj/poseidon-wasm.test.ts checks
 * that both committed files are what this source gives.
 */

/** BN254 scalar field order. */
const P = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
const LIMBS = 8;
const R = 1n << 256n;

/** Fixed addresses (bytes) in the module's memory; the round constants follow from `CONSTANTS`. */
export const LAYOUT = {
  /** Scratch elements used by the functions below. */
  scratch: 0,
  /** p, R² mod p and plain 1, written by the module's data segment. */
  modulus: 128,
  r2: 160,
  one: 192,
  /** The state: `t` elements; inputs go to 1..t-1 (plain), the hash comes out in 0 (plain). */
  state: 256,
  tmp: 1024,
  constants: 2048,
} as const;

const limbsOf = (x: bigint) => Array.from({ length: LIMBS }, (_, k) => (x >> BigInt(32 * k)) & 0xffffffffn);

function modInverse(a: bigint, m: bigint): bigint {
  let [r0, r1, s0, s1] = [a % m, m, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1] = [r1, r0 - q * r1];
    [s0, s1] = [s1, s0 - q * s1];
  }
  return ((s0 % m) + m) % m;
}

const W = 1n << 32n;
/** -p⁻¹ mod 2³² (Montgomery reduction's factor). */
const N_PRIME = (W - modInverse(P % W, W)) % W;
const pLimbs = limbsOf(P);

const get = (n: string) => `(local.get $${n})`;
const set = (n: string, v: string) => `(local.set $${n} ${v})`;
const MASK = '(i64.const 0xffffffff)';
const lo = (v: string) => `(i64.and ${v} ${MASK})`;
const hi = (v: string) => `(i64.shr_u ${v} (i64.const 32))`;
const c64 = (v: bigint) => `(i64.const ${v})`;
const locals = (names: string[]) => names.map((n) => `(local $${n} i64)`).join(' ');

/** `out = t - p` if that does not borrow, else `t` (limbs in locals `t0..`, result stored at $o). */
function conditionalSubtract(t: string): string[] {
  const out: string[] = [set('br', c64(0n))];
  for (let k = 0; k < LIMBS; k++) {
    out.push(set('x', `(i64.sub (i64.sub ${get(`${t}${k}`)} ${c64(pLimbs[k]!)}) ${get('br')})`));
    out.push(set(`d${k}`, lo(get('x'))));
    out.push(set('br', `(i64.shr_u ${get('x')} (i64.const 63))`));
  }
  for (let k = 0; k < LIMBS; k++) {
    out.push(
      `(i64.store32 offset=${4 * k} (local.get $o) (select ${get(`d${k}`)} ${get(`${t}${k}`)} (i64.eqz ${get('br')})))`,
    );
  }
  return out;
}

/** Montgomery product (CIOS): o = a·b·R⁻¹ mod p, for a, b < p. `o` may alias `a` or `b`. */
function mulFunc(): string {
  const a = Array.from({ length: LIMBS }, (_, k) => `a${k}`);
  const t = Array.from({ length: LIMBS + 2 }, (_, k) => `t${k}`);
  const d = Array.from({ length: LIMBS }, (_, k) => `d${k}`);
  const body: string[] = a.map((n, k) => set(n, `(i64.load32_u offset=${4 * k} (local.get $a))`));
  for (let i = 0; i < LIMBS; i++) {
    body.push(set('bi', `(i64.load32_u offset=${4 * i} (local.get $b))`));
    for (let j = 0; j < LIMBS; j++) {
      const prod = `(i64.mul ${get(`a${j}`)} ${get('bi')})`;
      let sum = i === 0 ? prod : `(i64.add ${get(`t${j}`)} ${prod})`;
      if (j > 0) sum = `(i64.add ${sum} ${get('c')})`;
      body.push(set('x', sum), set(`t${j}`, lo(get('x'))), set('c', hi(get('x'))));
    }
    if (i === 0) {
      body.push(set('t8', get('c')), set('t9', c64(0n)));
    } else {
      body.push(
        set('x', `(i64.add ${get('t8')} ${get('c')})`),
        set('t8', lo(get('x'))),
        set('t9', hi(get('x'))),
      );
    }
    body.push(set('m', lo(`(i64.mul ${get('t0')} ${c64(N_PRIME)})`)));
    body.push(set('c', hi(`(i64.add ${get('t0')} (i64.mul ${get('m')} ${c64(pLimbs[0]!)}))`)));
    for (let j = 1; j < LIMBS; j++) {
      body.push(
        set('x', `(i64.add (i64.add ${get(`t${j}`)} (i64.mul ${get('m')} ${c64(pLimbs[j]!)})) ${get('c')})`),
        set(`t${j - 1}`, lo(get('x'))),
        set('c', hi(get('x'))),
      );
    }
    body.push(
      set('x', `(i64.add ${get('t8')} ${get('c')})`),
      set('t7', lo(get('x'))),
      set('t8', `(i64.add ${get('t9')} ${hi(get('x'))})`),
    );
  }
  body.push(...conditionalSubtract('t'));
  return [
    '(func $mul (export "mul") (param $a i32) (param $b i32) (param $o i32)',
    `  ${locals([...a, ...t, ...d, 'bi', 'c', 'm', 'x', 'br'])}`,
    ...body.map((l) => `  ${l}`),
    ')',
  ].join('\n');
}

/** o = a + b mod p, for a, b < p. `o` may alias `a` or `b`. */
function addFunc(): string {
  const body: string[] = [set('c', c64(0n))];
  for (let k = 0; k < LIMBS; k++) {
    const sum = `(i64.add (i64.add (i64.load32_u offset=${4 * k} (local.get $a)) (i64.load32_u offset=${4 * k} (local.get $b))) ${get('c')})`;
    body.push(set('x', sum), set(`s${k}`, lo(get('x'))), set('c', hi(get('x'))));
  }
  body.push(...conditionalSubtract('s'));
  const names = [
    ...Array.from({ length: LIMBS }, (_, k) => `s${k}`),
    ...Array.from({ length: LIMBS }, (_, k) => `d${k}`),
  ];
  return [
    '(func $add (param $a i32) (param $b i32) (param $o i32)',
    `  ${locals([...names, 'c', 'x', 'br'])}`,
    ...body.map((l) => `  ${l}`),
    ')',
  ].join('\n');
}

/**
 * o = Σ_{k<n} a[k]·b[k]·R⁻¹ mod p (a dot product in Montgomery form), a[k] at `a + k·as`, b[k] at
 * `b + k·bs`, each < p, n ≤ 17. The limb products are summed unreduced into 17 limbs (their low and
 * high halves apart, so no carry chain per product) and reduced once: T < 17p², so after REDC the
 * value is below T/R + p < 4.3p and at most four subtractions of p finish it.
 */
function dotFunc(): string {
  const a = Array.from({ length: LIMBS }, (_, k) => `a${k}`);
  const b = Array.from({ length: LIMBS }, (_, k) => `b${k}`);
  const acc = Array.from({ length: 2 * LIMBS + 1 }, (_, k) => `u${k}`);
  const d = Array.from({ length: LIMBS }, (_, k) => `d${k}`);
  const product: string[] = [
    ...a.map((n, k) => set(n, `(i64.load32_u offset=${4 * k} (local.get $a))`)),
    ...b.map((n, k) => set(n, `(i64.load32_u offset=${4 * k} (local.get $b))`)),
  ];
  for (let i = 0; i < LIMBS; i++) {
    for (let j = 0; j < LIMBS; j++) {
      product.push(
        set('x', `(i64.mul ${get(`a${i}`)} ${get(`b${j}`)})`),
        set(`u${i + j}`, `(i64.add ${get(`u${i + j}`)} ${lo(get('x'))})`),
        set(`u${i + j + 1}`, `(i64.add ${get(`u${i + j + 1}`)} ${hi(get('x'))})`),
      );
    }
  }
  const reduce: string[] = [set('c', c64(0n))];
  for (let k = 0; k < acc.length; k++) {
    reduce.push(
      set('x', `(i64.add ${get(`u${k}`)} ${get('c')})`),
      set(`u${k}`, lo(get('x'))),
      set('c', hi(get('x'))),
    );
  }
  for (let i = 0; i < LIMBS; i++) {
    reduce.push(set('m', lo(`(i64.mul ${get(`u${i}`)} ${c64(N_PRIME)})`)), set('c', c64(0n)));
    for (let j = 0; j < LIMBS; j++) {
      reduce.push(
        set(
          'x',
          `(i64.add (i64.add ${get(`u${i + j}`)} (i64.mul ${get('m')} ${c64(pLimbs[j]!)})) ${get('c')})`,
        ),
        set(`u${i + j}`, lo(get('x'))),
        set('c', hi(get('x'))),
      );
    }
    for (let k = i + LIMBS; k < acc.length; k++) {
      reduce.push(
        set('x', `(i64.add ${get(`u${k}`)} ${get('c')})`),
        set(`u${k}`, lo(get('x'))),
        set('c', hi(get('x'))),
      );
    }
  }
  // the value is u8..u15 (u16 is 0): four times "subtract p unless that borrows"
  for (let round = 0; round < 4; round++) {
    reduce.push(set('br', c64(0n)));
    for (let k = 0; k < LIMBS; k++) {
      reduce.push(
        set('x', `(i64.sub (i64.sub ${get(`u${k + LIMBS}`)} ${c64(pLimbs[k]!)}) ${get('br')})`),
        set(`d${k}`, lo(get('x'))),
        set('br', `(i64.shr_u ${get('x')} (i64.const 63))`),
      );
    }
    for (let k = 0; k < LIMBS; k++) {
      reduce.push(
        set(`u${k + LIMBS}`, `(select ${get(`u${k + LIMBS}`)} ${get(`d${k}`)} (i32.wrap_i64 ${get('br')}))`),
      );
    }
  }
  const store = Array.from(
    { length: LIMBS },
    (_, k) => `(i64.store32 offset=${4 * k} (local.get $o) ${get(`u${k + LIMBS}`)})`,
  );
  return [
    '(func $dot (param $a i32) (param $as i32) (param $b i32) (param $bs i32) (param $n i32) (param $o i32)',
    `  ${locals([...a, ...b, ...acc, ...d, 'c', 'm', 'x', 'br'])}`,
    '  (loop $terms',
    ...product.map((l) => `    ${l}`),
    '    (local.set $a (i32.add (local.get $a) (local.get $as)))',
    '    (local.set $b (i32.add (local.get $b) (local.get $bs)))',
    '    (local.set $n (i32.sub (local.get $n) (i32.const 1)))',
    '    (br_if $terms (local.get $n)))',
    ...reduce.map((l) => `  ${l}`),
    ...store.map((l) => `  ${l}`),
    ')',
  ].join('\n');
}

/** Little-endian bytes of the limbs, as a data-segment string. */
const dataOf = (x: bigint) =>
  limbsOf(x)
    .flatMap((l) => [0, 8, 16, 24].map((s) => Number((l >> BigInt(s)) & 0xffn)))
    .map((b) => `\\${b.toString(16).padStart(2, '0')}`)
    .join('');

const S1 = LAYOUT.scratch;
const S2 = LAYOUT.scratch + 32;
const ACC = LAYOUT.scratch + 64;
const SCR = LAYOUT.scratch + 96;

/** The permutation and its helpers, written as text; `$mul` and `$add` come from the generators above. */
const LOOPS = `
;; x ← x⁵
(func $sbox (param $x i32)
  (call $mul (local.get $x) (local.get $x) (i32.const ${S1}))
  (call $mul (i32.const ${S1}) (i32.const ${S1}) (i32.const ${S2}))
  (call $mul (i32.const ${S2}) (local.get $x) (local.get $x))
)

;; state ← matᵀ · state (js-crypto: state[i] = Σ_j mat[j][i]·state[j]); mat is t×t, row-major
(func $mix (param $mat i32) (param $t i32)
  (local $i i32) (local $row i32)
  (local.set $row (i32.shl (local.get $t) (i32.const 5)))
  (local.set $i (i32.const 0))
  (loop $rows
    (call $dot
      (i32.add (local.get $mat) (i32.shl (local.get $i) (i32.const 5))) (local.get $row)
      (i32.const ${LAYOUT.state}) (i32.const 32)
      (local.get $t)
      (i32.add (i32.const ${LAYOUT.tmp}) (i32.shl (local.get $i) (i32.const 5))))
    (local.set $i (i32.add (local.get $i) (i32.const 1)))
    (br_if $rows (i32.lt_u (local.get $i) (local.get $t))))
  (memory.copy (i32.const ${LAYOUT.state}) (i32.const ${LAYOUT.tmp}) (local.get $row))
)

;; state[i] ← sbox(state[i]) + c[i] for i < t, then mix(mat)
(func $fullRound (param $c i32) (param $mat i32) (param $t i32)
  (local $i i32) (local $at i32)
  (local.set $i (i32.const 0))
  (loop $each
    (local.set $at (i32.add (i32.const ${LAYOUT.state}) (i32.shl (local.get $i) (i32.const 5))))
    (call $sbox (local.get $at))
    (call $add (local.get $at) (i32.add (local.get $c) (i32.shl (local.get $i) (i32.const 5))) (local.get $at))
    (local.set $i (i32.add (local.get $i) (i32.const 1)))
    (br_if $each (i32.lt_u (local.get $i) (local.get $t))))
  (call $mix (local.get $mat) (local.get $t))
)

;; Poseidon of state[1..t-1] (plain, each < p) with the width's constants (Montgomery form, laid out
;; by the caller: C flat, S flat, M and P row-major); the hash (plain) is left in state[0].
(func (export "poseidon") (param $t i32) (param $nP i32) (param $C i32) (param $S i32) (param $M i32) (param $P i32)
  (local $i i32) (local $r i32) (local $at i32) (local $s i32) (local $x i32) (local $cr i32)
  (local.set $x (i32.const ${LAYOUT.state}))
  (memory.copy (local.get $x) (local.get $C) (i32.const 32))
  (local.set $i (i32.const 1))
  (loop $in
    (local.set $at (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 5))))
    (call $mul (local.get $at) (i32.const ${LAYOUT.r2}) (local.get $at))
    (call $add (local.get $at) (i32.add (local.get $C) (i32.shl (local.get $i) (i32.const 5))) (local.get $at))
    (local.set $i (i32.add (local.get $i) (i32.const 1)))
    (br_if $in (i32.lt_u (local.get $i) (local.get $t))))
  ;; first half of the full rounds, the last with P
  (local.set $r (i32.const 1))
  (loop $first
    (call $fullRound
      (i32.add (local.get $C) (i32.shl (i32.mul (local.get $r) (local.get $t)) (i32.const 5)))
      (select (local.get $P) (local.get $M) (i32.eq (local.get $r) (i32.const 4)))
      (local.get $t))
    (local.set $r (i32.add (local.get $r) (i32.const 1)))
    (br_if $first (i32.le_u (local.get $r) (i32.const 4))))
  ;; partial rounds (sparse matrices S)
  (local.set $cr (i32.add (local.get $C) (i32.shl (i32.mul (i32.const 5) (local.get $t)) (i32.const 5))))
  (local.set $s (local.get $S))
  (local.set $r (i32.const 0))
  (loop $partial
    (call $sbox (local.get $x))
    (call $add (local.get $x) (i32.add (local.get $cr) (i32.shl (local.get $r) (i32.const 5))) (local.get $x))
    (call $dot (local.get $s) (i32.const 32) (local.get $x) (i32.const 32) (local.get $t) (i32.const ${ACC}))
    (local.set $i (i32.const 1))
    (loop $k
      (local.set $at (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 5))))
      (call $mul
        (local.get $x)
        (i32.add (local.get $s) (i32.shl (i32.add (local.get $t) (i32.sub (local.get $i) (i32.const 1))) (i32.const 5)))
        (i32.const ${SCR}))
      (call $add (local.get $at) (i32.const ${SCR}) (local.get $at))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $k (i32.lt_u (local.get $i) (local.get $t))))
    (memory.copy (local.get $x) (i32.const ${ACC}) (i32.const 32))
    (local.set $s (i32.add (local.get $s) (i32.shl (i32.sub (i32.shl (local.get $t) (i32.const 1)) (i32.const 1)) (i32.const 5))))
    (local.set $r (i32.add (local.get $r) (i32.const 1)))
    (br_if $partial (i32.lt_u (local.get $r) (local.get $nP))))
  ;; second half of the full rounds but the last
  (local.set $cr (i32.add (local.get $cr) (i32.shl (local.get $nP) (i32.const 5))))
  (local.set $r (i32.const 0))
  (loop $second
    (call $fullRound
      (i32.add (local.get $cr) (i32.shl (i32.mul (local.get $r) (local.get $t)) (i32.const 5)))
      (local.get $M)
      (local.get $t))
    (local.set $r (i32.add (local.get $r) (i32.const 1)))
    (br_if $second (i32.lt_u (local.get $r) (i32.const 3))))
  ;; last round: sbox, and only the first output of the matrix (column 0 of M)
  (local.set $i (i32.const 0))
  (loop $last
    (call $sbox (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 5))))
    (local.set $i (i32.add (local.get $i) (i32.const 1)))
    (br_if $last (i32.lt_u (local.get $i) (local.get $t))))
  (call $dot (local.get $M) (i32.shl (local.get $t) (i32.const 5)) (local.get $x) (i32.const 32) (local.get $t) (i32.const ${ACC}))
  ;; out of Montgomery form: ·1·R⁻¹
  (call $mul (i32.const ${ACC}) (i32.const ${LAYOUT.one}) (local.get $x))
)
`;

/** The module's text. */
export function poseidonWat(): string {
  return [
    ';; Generated by scripts/wasm/poseidon-wat.ts (npm run build:wasm); edit that file, not this one.',
    '(module',
    '(memory (export "memory") 1)',
    `(data (i32.const ${LAYOUT.modulus}) "${dataOf(P)}")`,
    `(data (i32.const ${LAYOUT.r2}) "${dataOf((R * R) % P)}")`,
    `(data (i32.const ${LAYOUT.one}) "${dataOf(1n)}")`,
    mulFunc(),
    addFunc(),
    dotFunc(),
    LOOPS.trim(),
    ')',
    '',
  ].join('\n');
}

/** The binary of `text`, as wabt 1.0.39 writes it (no names section, so the bytes depend on the text only). */
export async function compileWat(text: string): Promise<Uint8Array> {
  const wabt = await wabtInit();
  const mod = wabt.parseWat('poseidon.wat', text, { bulk_memory: true });
  try {
    mod.validate();
    return mod.toBinary({ log: false, write_debug_names: false }).buffer;
  } finally {
    mod.destroy();
  }
}
