// Runs one of the kit's entries from its compiled JavaScript (scripts/build.mjs), building it
// first when the sources changed since the last build, so what runs is always the sources as
// they are: `node scripts/launch.mjs src/main.ts [args...]`. The entry runs in this process, with
// process.argv[1] set to its compiled file (so that `cluster.fork()` starts the compiled entry).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt } from './build.mjs';

const entry = process.argv[2];
if (!entry?.endsWith('.ts')) {
  console.error('usage: node scripts/launch.mjs <src/main.ts | scripts/name.ts> [arguments]');
  process.exit(2);
}
const file = join(await ensureBuilt(), entry.replace(/\.ts$/, '.js'));
process.argv.splice(1, 2, file);
await import(pathToFileURL(file).href);
