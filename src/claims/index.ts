import type { SchemaRegistry } from '../schemas/schema-registry.js';
import type { ClaimsStore } from '../store/store.js';
import type { ClaimsProvider } from './claims-provider.js';
import { HttpClaimsProvider } from './http-claims-provider.js';
import { loadModuleClaimsProvider } from './module-claims-provider.js';
import { SqliteClaimsProvider } from './sqlite-claims-provider.js';

export type { ClaimsAnswer, ClaimsProvider, ClaimsQuery } from './claims-provider.js';
export { ClaimsSourceError } from './claims-provider.js';

/** One provider per schema, built once at start-up from each schema's `claims` block. */
export async function createClaimsProviders(
  registry: SchemaRegistry,
  claimsStore: ClaimsStore,
  schemasDir: string,
): Promise<Map<string, ClaimsProvider>> {
  const sqlite = new SqliteClaimsProvider(claimsStore);
  const providers = new Map<string, ClaimsProvider>();
  for (const schema of registry.all()) {
    const source = schema.claims;
    switch (source.provider) {
      case 'sqlite':
        providers.set(schema.schemaId, sqlite);
        break;
      case 'http':
        providers.set(schema.schemaId, new HttpClaimsProvider(source.url, source.timeoutMs, source.headers));
        break;
      case 'module':
        providers.set(schema.schemaId, await loadModuleClaimsProvider(source.path, schemasDir, schema.file));
        break;
    }
  }
  return providers;
}
