import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEV_SECRETS_FILE, type DevSecrets, DevSecretsSchema } from './development-files.js';

/**
 * Development only (docs/configuration.md): API keys and partner id generated on first run and kept in
 * KEYS_DIR/dev-secrets.json (git-ignored, 0600) so they survive restarts; production start-up
 * refuses any of its values (src/development/production-guard.ts).
 */
export function loadOrCreateDevSecrets(keysDir: string): {
  secrets: DevSecrets;
  created: boolean;
  file: string;
} {
  const file = join(keysDir, DEV_SECRETS_FILE);
  if (existsSync(file)) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(
        `${file}: not readable JSON (${(err as Error).message}); delete the file to regenerate`,
      );
    }
    const parsed = DevSecretsSchema.safeParse(raw);
    if (!parsed.success)
      throw new Error(
        `${file}: ${parsed.error.issues[0]?.path.join('.')}: invalid; delete the file to regenerate`,
      );
    return { secrets: parsed.data, created: false, file };
  }
  mkdirSync(keysDir, { recursive: true, mode: 0o700 });
  const secrets: DevSecrets = {
    environment: 'development',
    apiKey: `dev_${randomBytes(24).toString('base64url')}`,
    adminApiKey: `dev_admin_${randomBytes(24).toString('base64url')}`,
    partnerId: randomUUID(),
  };
  writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  return { secrets, created: true, file };
}
