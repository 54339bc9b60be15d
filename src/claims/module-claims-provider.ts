import { realpathSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type ClaimsProvider, parseClaimsAnswer } from './claims-provider.js';

/**
 * docs/schemas-and-claims.md `module` provider: a JS/TS module (path relative to SCHEMAS_DIR, or absolute inside
 * it) exporting a ClaimsProvider as `default` or `claimsProvider`, or a factory
 * `createClaimsProvider()`. The path is confined to SCHEMAS_DIR after resolving symlinks (a path
 * such as `../../../../etc/passwd` is refused). Every failure names the schema file that asked.
 * Node caches a module by its URL: a schema reload picks up a new module path, not new code at the
 * same path.
 */
export async function loadModuleClaimsProvider(
  path: string,
  schemasDir: string,
  schemaFile: string,
): Promise<ClaimsProvider> {
  const fail = (message: string) => new Error(`${schemaFile}: claims.path ${path}: ${message}`);
  let file: string;
  let dir: string;
  try {
    dir = realpathSync(schemasDir);
    file = realpathSync(resolve(schemasDir, path));
  } catch (err) {
    throw fail(`cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const inside = relative(dir, file);
  if (inside === '' || inside.startsWith(`..${sep}`) || inside === '..' || resolve(dir, inside) !== file)
    throw fail(`must be a file inside SCHEMAS_DIR (${schemasDir})`);
  let mod: Record<string, unknown>;
  try {
    mod = (await importModule(file)) as Record<string, unknown>;
  } catch (err) {
    throw fail(`the module ${file} failed to load: ${(err as Error).message}`);
  }
  const factory = mod.createClaimsProvider;
  const candidate =
    typeof factory === 'function' ? await (factory as () => unknown)() : (mod.claimsProvider ?? mod.default);
  if (!candidate || typeof (candidate as ClaimsProvider).lookup !== 'function') {
    throw fail(
      `${file} must export a ClaimsProvider (an object with lookup()) as default, claimsProvider or createClaimsProvider()`,
    );
  }
  const provider = candidate as ClaimsProvider;
  // The module's answers are checked like the http provider's: a malformed one is an outage.
  return { lookup: async (query) => parseClaimsAnswer(await provider.lookup(query)) };
}

/**
 * Imports a provider module. A TypeScript one, when the kit itself runs as compiled JavaScript
 * (scripts/build.mjs; Node 20 has no TypeScript loader), goes through tsx's scoped loader; from
 * the TypeScript sources (tsx, vitest) the process's own loader takes it.
 */
async function importModule(file: string): Promise<unknown> {
  if (/\.[cm]?ts$/.test(file) && import.meta.url.endsWith('.js')) {
    const { tsImport } = await import('tsx/esm/api');
    return tsImport(pathToFileURL(file).href, import.meta.url);
  }
  return import(pathToFileURL(file).href);
}
