// MerklizePool's worker entry when the kit runs from its TypeScript sources (tsx, vitest): a worker
// has no TypeScript loader of its own unless the process was started with one, so this plain module
// loads the worker through tsx's scoped loader.
import { tsImport } from 'tsx/esm/api';

await tsImport('./merklize-worker.ts', import.meta.url);
