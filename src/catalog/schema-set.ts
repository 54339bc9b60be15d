import type { ClaimsProvider } from '../claims/claims-provider.js';
import { createClaimsProvider, SqliteClaimsProvider } from '../claims/index.js';
import type { CredentialFormat, StartedFormat } from '../formats/format.js';
import { buildTypeMetadata } from '../formats/sd-jwt-vc/type-metadata.js';
import type { IssuerUrls } from '../identity/issuer-identity.js';
import type { HttpPools } from '../outbound/http-json.js';
import { SchemaFileError, type SchemaFileProblem, type SchemaRegistry } from '../schemas/schema-registry.js';
import type { ClaimsStore } from '../store/store.js';
import type { SchemaSet } from './schema-catalog.js';

export interface SchemaSetDeps {
  schemasDir: string;
  /** The issuer whose origin prefixes the served type metadata `vct`s. */
  urls: IssuerUrls;
  claimsStore: ClaimsStore;
  /** The context's outbound pools, which `http` claims providers call through. */
  http: HttpPools;
  /**
   * Every credential format, with its started parts when on. A format that stays off at start-up
   * (Iden3 opens its identity only when a schema lists it) refuses a reloaded set that needs it.
   */
  formats: ReadonlyArray<{ format: CredentialFormat; started: StartedFormat | undefined }>;
}

/**
 * Everything the server derives from loaded schema files: claims providers, type metadata, and the
 * formats' prepared schemas (Iden3's JSON-LD contexts). Every problem found is thrown in one SchemaFileError naming
 * its file; nothing is prepared then.
 */
export async function buildSchemaSet(registry: SchemaRegistry, deps: SchemaSetDeps): Promise<SchemaSet> {
  const schemas = registry.all();
  const problems: SchemaFileProblem[] = [];
  for (const { format, started } of deps.formats)
    problems.push(...(format.schemaProblems?.(schemas, deps.schemasDir, started) ?? []));
  const sqlite = new SqliteClaimsProvider(deps.claimsStore);
  const claimsProviders = new Map<string, ClaimsProvider>();
  for (const schema of schemas) {
    try {
      claimsProviders.set(
        schema.schemaId,
        await createClaimsProvider(schema, sqlite, deps.schemasDir, (url, payload, options) =>
          deps.http.post(url, payload, options),
        ),
      );
    } catch (err) {
      // The module provider's messages already start with the schema file.
      const message = (err as Error).message;
      problems.push({
        file: schema.file,
        message: message.startsWith(`${schema.file}: `) ? message.slice(schema.file.length + 2) : message,
      });
    }
  }
  if (problems.length > 0) throw new SchemaFileError(problems);
  // The running format's own check (Iden3's loader refuses a context URL it serves from another file).
  for (const { format, started } of deps.formats) {
    if (!started?.prepareSchema) continue;
    for (const schema of schemas.filter((s) => s.proofTypes.includes(format.proofType))) {
      try {
        started.prepareSchema(schema);
      } catch (err) {
        problems.push({ file: schema.file, message: (err as Error).message });
      }
    }
  }
  if (problems.length > 0) throw new SchemaFileError(problems);
  return { registry, typeMetadata: buildTypeMetadata(schemas, deps.urls.origin), claimsProviders };
}
