import { existsSync } from 'node:fs';
import type { ClaimsStore } from '../store/store.js';
import { readClaimsFile } from './development-files.js';

/** Development only: an empty claims table gets the shipped examples so the demo works at once. */
export async function seedExampleClaims(store: ClaimsStore, file: string): Promise<number> {
  if (!existsSync(file) || (await store.countClaims()) > 0) return 0;
  return store.upsertClaims(readClaimsFile(file));
}
