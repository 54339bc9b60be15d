import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileWat, poseidonWat } from '../../../../scripts/wasm/poseidon-wat.js';

// poseidon.wasm is committed beside its text; both must be what scripts/wasm/poseidon-wat.ts gives
// (`npm run build:wasm` regenerates them), so the binary that runs is the reviewed source.

const file = (name: string) => new URL(`../../../../src/formats/iden3-bjj/${name}`, import.meta.url);

describe('poseidon.wasm', () => {
  it('poseidon.wat is the generator output', () => {
    expect(readFileSync(file('poseidon.wat'), 'utf8')).toBe(poseidonWat());
  });

  it('poseidon.wasm is wabt’s binary of poseidon.wat', async () => {
    const committed = new Uint8Array(readFileSync(file('poseidon.wasm')));
    const built = await compileWat(readFileSync(file('poseidon.wat'), 'utf8'));
    expect(Buffer.from(committed).equals(Buffer.from(built))).toBe(true);
  });
});
