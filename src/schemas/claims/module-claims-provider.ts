import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type ClaimsProvider, parseClaimsAnswer } from './claims-provider.js';

/**
 * DESIGN §8 `module` provider: a JS/TS module (path relative to SCHEMAS_DIR, or absolute)
 * exporting a ClaimsProvider as `default` or `claimsProvider`, or a factory `createClaimsProvider()`.
 */
export async function loadModuleClaimsProvider(path: string, schemasDir: string): Promise<ClaimsProvider> {
  const file = isAbsolute(path) ? path : resolve(schemasDir, path);
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const factory = mod.createClaimsProvider;
  const candidate =
    typeof factory === 'function' ? await (factory as () => unknown)() : (mod.claimsProvider ?? mod.default);
  if (!candidate || typeof (candidate as ClaimsProvider).lookup !== 'function') {
    throw new Error(
      `${file}: must export a ClaimsProvider (an object with lookup()) as default, claimsProvider or createClaimsProvider()`,
    );
  }
  const provider = candidate as ClaimsProvider;
  // The module's answers are checked like the http provider's: a malformed one is an outage.
  return { lookup: async (query) => parseClaimsAnswer(await provider.lookup(query)) };
}
