/**
 * `npm run keys:generate`: creates the production keys in KEYS_DIR (default ./keys), once.
 * Existing active keys are kept (use `npm run admin -- keys rotate` to replace one).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { generateKey, type KeyPurpose, readKeys } from '../src/keys/key-ring.js';

if (existsSync('.env')) process.loadEnvFile('.env');
const dir = resolve(process.env.KEYS_DIR ?? './keys');

const keys = await readKeys(dir);
for (const purpose of ['credential-signing', 'partner-jwt'] as KeyPurpose[]) {
  const active = keys.find((k) => k.purpose === purpose && !k.retiredAt);
  if (active) {
    console.log(`${purpose}: keeping ${active.kid} (${active.file})`);
    continue;
  }
  const key = await generateKey(dir, purpose);
  console.log(`${purpose}: created ${key.kid} (${key.file}, mode 0600)`);
}
