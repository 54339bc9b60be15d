import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropListedDatabases, RUN_DATABASES_FILE } from './services.js';

/**
 * Once per vitest run (each project may call it; the first one owns the list): the list of the
 * run's temporary PostgreSQL databases, which the test workers inherit through the environment,
 * and their drop when the run ends.
 */
export function setup(): (() => Promise<void>) | undefined {
  if (process.env[RUN_DATABASES_FILE]) return undefined;
  const file = join(tmpdir(), `issuer-kit-test-databases-${process.pid}.jsonl`);
  process.env[RUN_DATABASES_FILE] = file;
  return async () => {
    await dropListedDatabases(file);
    delete process.env[RUN_DATABASES_FILE];
  };
}
