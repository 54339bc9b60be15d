import type { ClaimsProvider } from '../claims/claims-provider.js';
import { createClaimsProvider, SqliteClaimsProvider } from '../claims/index.js';
import { type Iden3BjjIssuer, iden3ContextProblems } from '../formats/iden3-bjj/iden3-bjj-issuer.js';
import { SchemaFileError, type SchemaFileProblem, type SchemaRegistry } from '../schemas/schema-registry.js';
import { buildTypeMetadata } from '../schemas/type-metadata.js';
import type { ClaimsStore } from '../store/store.js';
import type { SchemaSet } from './schema-catalog.js';

export interface SchemaSetDeps {
  schemasDir: string;
  issuerOrigin: string;
  claimsStore: ClaimsStore;
  /**
   * The Iden3 back-end, when on. It starts only when a schema lists BJJ_SIG_2021 at start-up (it
   * opens the issuer identity), so a reloaded set that needs it while it is off is refused.
   */
  iden3: Pick<Iden3BjjIssuer, 'prepareSchema' | 'servedContext'> | undefined;
}

/**
 * Everything the server derives from loaded schema files: claims providers, type metadata, and the
 * Iden3 back-end's prepared schemas. Every problem found is thrown in one SchemaFileError naming
 * its file; nothing is prepared then.
 */
export async function buildSchemaSet(registry: SchemaRegistry, deps: SchemaSetDeps): Promise<SchemaSet> {
  const schemas = registry.all();
  const problems: SchemaFileProblem[] = [];
  const bjj = schemas.filter((s) => s.proofTypes.includes('BJJ_SIG_2021'));
  if (bjj.length > 0 && !deps.iden3) {
    for (const s of bjj)
      problems.push({
        file: s.file,
        message:
          'proofTypes: BJJ_SIG_2021 needs the Iden3 back-end, which starts only when a schema lists it at start-up; restart the server to add it',
      });
  } else problems.push(...iden3ContextProblems(bjj, deps.schemasDir, deps.iden3));
  const sqlite = new SqliteClaimsProvider(deps.claimsStore);
  const claimsProviders = new Map<string, ClaimsProvider>();
  for (const schema of schemas) {
    try {
      claimsProviders.set(schema.schemaId, await createClaimsProvider(schema, sqlite, deps.schemasDir));
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
  // The running back-end's own loader: a context URL it already serves from another file is refused.
  for (const schema of bjj) {
    try {
      deps.iden3?.prepareSchema(schema);
    } catch (err) {
      problems.push({ file: schema.file, message: `iden3: ${(err as Error).message}` });
    }
  }
  if (problems.length > 0) throw new SchemaFileError(problems);
  return { registry, typeMetadata: buildTypeMetadata(schemas, deps.issuerOrigin), claimsProviders };
}
