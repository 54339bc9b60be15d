/**
 * `npm run keys:generate`: creates the production keys in KEYS_DIR (default ./keys), once:
 * credential-signing, partner-JWT and the Iden3 BabyJubJub key. Existing keys are kept (rotate
 * with `npm run admin -- keys rotate`).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { generateMissingKeys } from '../src/cli/keys.js';

if (existsSync('.env')) process.loadEnvFile('.env');
for (const key of await generateMissingKeys(resolve(process.env.KEYS_DIR ?? './keys'))) {
  console.log(
    `${key.purpose}: ${key.created ? 'created' : 'keeping'} ${key.kid} (${key.file}${key.created ? ', mode 0600' : ''})`,
  );
}
