import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { DEV_SECRETS_FILE } from '../keys/dev-secrets.js';

/**
 * Where the admin CLI finds its server and key (the CLI's only reader of the environment):
 * the process environment wins over `.env` in the working folder; in development an unset
 * ADMIN_API_KEY is read from KEYS_DIR/dev-secrets.json, as the server generated it.
 */
export interface CliSettings {
  url: string;
  adminApiKey: string | undefined;
  keysDir: string;
}

export function loadCliSettings(
  options: { url?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): CliSettings {
  const dotenv = join(cwd, '.env');
  const fromFile = existsSync(dotenv) ? parseEnv(readFileSync(dotenv, 'utf8')) : {};
  const merged: Record<string, string | undefined> = { ...fromFile };
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') merged[k] = v;

  const keysDir = resolve(cwd, merged.KEYS_DIR ?? './keys');
  let adminApiKey = merged.ADMIN_API_KEY;
  if (adminApiKey === undefined && merged.NODE_ENV !== 'production') {
    const file = join(keysDir, DEV_SECRETS_FILE);
    if (existsSync(file)) {
      const dev = JSON.parse(readFileSync(file, 'utf8')) as { adminApiKey?: unknown };
      if (typeof dev.adminApiKey === 'string') adminApiKey = dev.adminApiKey;
    }
  }
  const url = (
    options.url ??
    merged.ISSUER_URL ??
    merged.ISSUER_ORIGIN ??
    `http://localhost:${merged.PORT ?? 3000}`
  ).replace(/\/+$/, '');
  return { url, adminApiKey, keysDir };
}
