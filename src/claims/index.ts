import type { PostJson } from '../outbound/http-json.js';
import type { LoadedSchema, SchemaRegistry } from '../schemas/schema-registry.js';
import type { ClaimsStore } from '../store/store.js';
import type { ClaimsProvider } from './claims-provider.js';
import { HttpClaimsProvider } from './http-claims-provider.js';
import { loadModuleClaimsProvider } from './module-claims-provider.js';
import { SqliteClaimsProvider } from './sqlite-claims-provider.js';

export type {
  ClaimsAnswer,
  ClaimsPending,
  ClaimsProvider,
  ClaimsQuery,
  ProviderAnswer,
} from './claims-provider.js';
export { ClaimsSourceError, isPending } from './claims-provider.js';
export { SqliteClaimsProvider };

/** One provider per schema, built at start-up (and by a schema reload) from each schema's `claims` block. */
export async function createClaimsProviders(
  registry: SchemaRegistry,
  claimsStore: ClaimsStore,
  schemasDir: string,
  post: PostJson,
): Promise<Map<string, ClaimsProvider>> {
  const sqlite = new SqliteClaimsProvider(claimsStore);
  const providers = new Map<string, ClaimsProvider>();
  for (const schema of registry.all())
    providers.set(schema.schemaId, await createClaimsProvider(schema, sqlite, schemasDir, post));
  return providers;
}

/** The provider of one schema; a `module` provider that does not load throws naming the schema file. */
export async function createClaimsProvider(
  schema: LoadedSchema,
  sqlite: SqliteClaimsProvider,
  schemasDir: string,
  /** The outbound pools an `http` provider calls through. */
  post: PostJson,
): Promise<ClaimsProvider> {
  const source = schema.claims;
  switch (source.provider) {
    case 'sqlite':
      return sqlite;
    case 'http':
      return new HttpClaimsProvider(source.url, source.timeoutMs, source.headers, post);
    case 'module':
      return loadModuleClaimsProvider(source.path, schemasDir, schema.file);
  }
}
