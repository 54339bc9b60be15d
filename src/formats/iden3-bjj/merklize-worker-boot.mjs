// MerklizePool's worker entry when the kit runs from its TypeScript sources (tsx, vitest): a worker
// has no TypeScript loader of its own, so it runs the compiled copy of these same sources
// (scripts/build.mjs: the build of the sources as they are now, made first when missing). Loading
// the worker's TypeScript through tsx instead cost each new worker about a second of CPU.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt } from '../../../scripts/build.mjs';

await import(pathToFileURL(join(await ensureBuilt(), 'src/formats/iden3-bjj/merklize-worker.js')).href);
