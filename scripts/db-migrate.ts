/**
 * `npm run db:migrate`: applies the pending migrations of the database DATABASE_URL names
 * (sqlite:<path> by default, or postgres://…), ahead of a deploy. Safe to run while instances start:
 * each migration is applied once.
 */
import { existsSync } from 'node:fs';
import { ConfigError, parseEnv } from '../src/config/env.js';
import { DEFAULT_DATABASE_URL } from '../src/store/database-url.js';
import { migrateDatabase } from '../src/store/engines.js';

if (existsSync('.env')) process.loadEnvFile('.env');
try {
  const { env } = parseEnv(process.env);
  const { target, applied } = await migrateDatabase(env.DATABASE_URL ?? DEFAULT_DATABASE_URL, process.cwd());
  if (applied.length === 0) console.log(`${target}: up to date`);
  for (const name of applied) console.log(`${target}: applied ${name}`);
} catch (err) {
  if (err instanceof ConfigError) for (const line of err.problems) console.error(`config: ${line}`);
  else console.error(`db:migrate: ${(err as Error).message}`);
  process.exit(1);
}
