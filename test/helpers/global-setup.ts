import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error scripts/build.mjs is plain JavaScript without declarations
import { ensureBuilt } from '../../scripts/build.mjs';
import { dropListedDatabases, RUN_DATABASES_FILE } from './services.js';

/**
 * Once per vitest run (each project may call it; the first one owns the list): the list of the
 * run's temporary PostgreSQL databases, which the test workers inherit through the environment,
 * and their drop when the run ends; and the build of the sources as they are.
 */
export async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env[RUN_DATABASES_FILE]) return undefined;
  // The compiled sources the test processes start from (helpers/entry.ts), built once here rather
  // than by two workers' first starts at the same time.
  await ensureBuilt();
  const file = join(tmpdir(), `issuer-kit-test-databases-${process.pid}.jsonl`);
  process.env[RUN_DATABASES_FILE] = file;
  return async () => {
    await dropListedDatabases(file);
    delete process.env[RUN_DATABASES_FILE];
  };
}
