// The kit's compiled JavaScript (docs/architecture.md "Compiled JavaScript"): every TypeScript
// file of src/ and the entry scripts transpiled one to one by esbuild (no type check: that is
// `npm run check`), the other files of src/ (migrations, contexts, WebAssembly) copied beside them.
//
// A build lives in dist/<fingerprint>/, the fingerprint being a hash of every input's name, size and
// modification time (sources, package.json, tsconfig.json, this file): a changed, added or removed
// source is a new fingerprint, so a stale build is never run — the launcher (scripts/launch.mjs) finds the build
// of the sources as they are now, or makes it. A process keeps running from the folder it started
// in; the three newest builds are kept.
//
// Plain JavaScript on purpose: it runs before anything is compiled.
//   node scripts/build.mjs     build now (if not built yet) and print the folder
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
const KEEP = 3;

/** The scripts compiled besides src/ (the commands package.json starts through the launcher). */
export const ENTRY_SCRIPTS = ['admin', 'db-migrate', 'emulator', 'keys-generate'].map(
  (name) => `scripts/${name}.ts`,
);

/** Every file under `dir` (relative to ROOT, '/'-separated), sorted. */
function filesUnder(dir) {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(ROOT, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort();
}

/** The build's inputs: what a change to would make another build. */
function inputs() {
  return [
    ...filesUnder('src'),
    ...ENTRY_SCRIPTS,
    'package.json',
    'tsconfig.json',
    'scripts/build.mjs',
    'scripts/launch.mjs',
  ];
}

/**
 * A hash of every input's path, size and modification time: a stat per file, no read, so that
 * checking costs the CLI's start little. Any edit, checkout, added or removed file changes it.
 */
export function fingerprint() {
  const hash = createHash('sha256');
  for (const file of inputs()) {
    const { size, mtimeMs } = statSync(join(ROOT, file));
    hash.update(`${file}\0${size}\0${mtimeMs}\n`);
  }
  return hash.digest('hex').slice(0, 16);
}

/** The build of the sources as they are now (dist/<fingerprint>), made first when missing. */
export async function ensureBuilt() {
  const id = fingerprint();
  const out = join(DIST, id);
  if (existsSync(join(out, '.complete'))) return out;
  // The thread too: worker threads of one process may build at the same moment.
  const tmp = join(DIST, `.${id}.${process.pid}.${threadId}.tmp`);
  rmSync(tmp, { recursive: true, force: true });
  try {
    await compileInto(tmp);
    try {
      renameSync(tmp, out);
    } catch (err) {
      // Another process built the same sources meanwhile: theirs is as good as ours.
      if (!existsSync(join(out, '.complete'))) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  prune(id);
  return out;
}

async function compileInto(dir) {
  const { build } = await import('esbuild');
  const all = inputs();
  const sources = all.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  await build({
    absWorkingDir: ROOT,
    entryPoints: sources,
    outdir: dir,
    outbase: '.',
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    tsconfig: join(ROOT, 'tsconfig.json'),
    logLevel: 'error',
  });
  for (const file of all.filter((f) => f.startsWith('src/') && !f.endsWith('.ts'))) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(ROOT, file), join(dir, file));
  }
  // Read as `../package.json` from src/ (the version): the name, version and module type only.
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: pkg.type }, null, 2)}\n`,
  );
  writeFileSync(join(dir, '.complete'), `${new Date().toISOString()}\n`);
}

/** Keeps the newest builds (a running process may still load modules lazily from its own). */
function prune(current) {
  const builds = readdirSync(DIST, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== current)
    .map((e) => ({ name: e.name, at: statSync(join(DIST, e.name)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const old of builds.slice(KEEP - 1)) rmSync(join(DIST, old.name), { recursive: true, force: true });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(relative(process.cwd(), await ensureBuilt()) || '.');
}
