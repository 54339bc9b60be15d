import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { DEV_SECRETS_FILE } from '../keys/key-files.js';

/**
 * Where the admin CLI finds its server and key (the CLI's only reader of the environment):
 * the process environment wins over `.env` in the working folder; in development an unset
 * ADMIN_API_KEY is read from KEYS_DIR/dev-secrets.json, as the server generated it.
 */
export interface CliSettings {
  url: string;
  adminApiKey: string | undefined;
  /** OPERATOR_API_KEY: `tenants` commands (TENANCY=multi). */
  operatorApiKey: string | undefined;
  keysDir: string;
  production: boolean;
  /** DATABASE_URL as the server reads it (for `backup`, which works on the file). */
  databaseUrl: string;
  /** The environment as the server would read it (process environment over `.env`): for `doctor`. */
  env: Record<string, string | undefined>;
  cwd: string;
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
  // Without ADMIN_API_KEY, the first named key of ADMIN_API_KEYS (`name:key,…`).
  let adminApiKey =
    merged.ADMIN_API_KEY ?? merged.ADMIN_API_KEYS?.split(',')[0]?.split(':').slice(1).join(':');
  if (adminApiKey === undefined && merged.NODE_ENV !== 'production') {
    const file = join(keysDir, DEV_SECRETS_FILE);
    if (existsSync(file)) {
      const dev = JSON.parse(readFileSync(file, 'utf8')) as { adminApiKey?: unknown };
      if (typeof dev.adminApiKey === 'string') adminApiKey = dev.adminApiKey;
    }
  }
  // The admin listener when there is one, else the local main listener; never ISSUER_ORIGIN (the
  // public origin sits behind a proxy that may not forward admin routes at all).
  const adminHost = merged.ADMIN_HOST && merged.ADMIN_HOST !== '0.0.0.0' ? merged.ADMIN_HOST : 'localhost';
  const url = (
    options.url ??
    merged.ISSUER_URL ??
    (merged.ADMIN_PORT
      ? `http://${adminHost.includes(':') ? `[${adminHost}]` : adminHost}:${merged.ADMIN_PORT}`
      : `http://localhost:${merged.PORT ?? 3000}`)
  ).replace(/\/+$/, '');
  return {
    url,
    adminApiKey,
    operatorApiKey: merged.OPERATOR_API_KEY,
    keysDir,
    production: merged.NODE_ENV === 'production',
    databaseUrl: merged.DATABASE_URL ?? 'sqlite:./data/issuer.db',
    env: merged,
    cwd,
  };
}
