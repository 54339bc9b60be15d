import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * Development only (DESIGN §7): API keys and partner id generated on first run and kept in
 * KEYS_DIR/dev-secrets.json (git-ignored, 0600) so they survive restarts. Production refuses
 * these defaults in config validation before this is ever called.
 */
const DevSecretsSchema = z.object({
  apiKey: z.string().min(32),
  adminApiKey: z.string().min(32),
  partnerId: z.uuid(),
});
export type DevSecrets = z.infer<typeof DevSecretsSchema>;

export const DEV_SECRETS_FILE = 'dev-secrets.json';

export function loadOrCreateDevSecrets(keysDir: string): {
  secrets: DevSecrets;
  created: boolean;
  file: string;
} {
  const file = join(keysDir, DEV_SECRETS_FILE);
  if (existsSync(file)) {
    const parsed = DevSecretsSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success)
      throw new Error(
        `${file}: ${parsed.error.issues[0]?.path.join('.')}: invalid; delete the file to regenerate`,
      );
    return { secrets: parsed.data, created: false, file };
  }
  mkdirSync(keysDir, { recursive: true, mode: 0o700 });
  const secrets: DevSecrets = {
    apiKey: `dev_${randomBytes(24).toString('base64url')}`,
    adminApiKey: `dev_admin_${randomBytes(24).toString('base64url')}`,
    partnerId: randomUUID(),
  };
  writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  return { secrets, created: true, file };
}
