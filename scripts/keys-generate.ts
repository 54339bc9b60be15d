/**
 * `npm run keys:generate`: creates the production keys in KEYS_DIR (default ./keys), once:
 * credential-signing, partner-JWT and the Iden3 BabyJubJub key. Existing keys are kept (rotate
 * with `npm run admin -- keys rotate`), except that under NODE_ENV=production everything a
 * development start wrote in KEYS_DIR (its keys, dev-secrets.json, dev-emulator.json, the
 * development CA) is moved to KEYS_DIR/development/, and the keys are replaced.
 * `-- --x5c` (development only): also a development CA (KEYS_DIR/dev-ca.json, dev-ca.pem) and a
 * leaf for ISSUER_ORIGIN's host on the active credential-signing key, for SD_JWT_ISSUER=x5c.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describeGenerated, generateMissingKeys } from '../src/cli/keys.js';
import { ConfigError } from '../src/config/env.js';
import { keyBackendFromEnv } from '../src/keys/open-key-backend.js';

if (existsSync('.env')) process.loadEnvFile('.env');
const keysDir = resolve(process.env.KEYS_DIR ?? './keys');
const production = process.env.NODE_ENV === 'production';
// KEY_BACKEND=pkcs11: the ES256 keys are generated in the token
// (docs/security.md "Keys in a hardware security module").
let backend: Awaited<ReturnType<typeof keyBackendFromEnv>>;
try {
  backend = await keyBackendFromEnv(process.env);
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `error: ${(err as Error).message}`);
  process.exit(1);
}
for (const line of describeGenerated(await generateMissingKeys(keysDir, { production, backend })))
  console.log(line);
if (process.argv.includes('--x5c')) {
  const { generateDevChain } = await import('../src/cli/key-certificates.js');
  try {
    const out = await generateDevChain(keysDir, process.env, new Date(), backend);
    console.log(`x5c: ${out.kid} certified for ${out.host} by the development CA (trust ${out.caPem})`);
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
await backend.close();
