import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compileWat, poseidonWat } from './wasm/poseidon-wat.js';

// Regenerates src/formats/iden3-bjj/poseidon.wat and poseidon.wasm from scripts/wasm/poseidon-wat.ts.
const dir = fileURLToPath(new URL('../src/formats/iden3-bjj/', import.meta.url));
const text = poseidonWat();
const binary = await compileWat(text);
writeFileSync(`${dir}poseidon.wat`, text);
writeFileSync(`${dir}poseidon.wasm`, binary);
console.log(`poseidon.wasm: ${binary.length} bytes`);
