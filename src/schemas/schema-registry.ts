import { hash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { z } from 'zod';
import { AppError } from '../errors.js';
import type { IssuerUrls } from '../issuer-urls.js';
import type { ProofType } from '../model.js';
import {
  type CredentialSchema,
  RESERVED_CLAIMS,
  type SchemaFile,
  SchemaFileBaseSchema,
  unknownSchema,
} from './schema-file.js';

// ajv-formats is CommonJS with a default export; under ESM interop the function can sit on .default.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as typeof addFormatsModule;

// Defined with the schema file contract (no Ajv), so light callers such as the admin CLI can use it.
export { RESERVED_CLAIMS } from './schema-file.js';

/** A problem of one schema file (`file` is SCHEMAS_DIR itself when the folder cannot be read). */
export interface SchemaFileProblem {
  file: string;
  message: string;
}

/** Every problem found; `message` has one `<file>: <problem>` line each. */
export class SchemaFileError extends Error {
  override name = 'SchemaFileError';
  constructor(readonly problems: SchemaFileProblem[]) {
    super(problems.map((p) => `${p.file}: ${p.message}`).join('\n'));
  }
}

export interface LoadedSchema extends CredentialSchema {
  /** Validates claims (the credentialSubject without `id`) as JSON Schema 2020-12. */
  validateClaims(claims: unknown): ClaimsProblem[];
  /** Every problem of claims about to be signed: reserved names first, then the JSON Schema's. */
  claimProblems(claims: Record<string, unknown>): ClaimsProblem[];
}

export interface ClaimsProblem {
  claim: string;
  message: string;
}

/**
 * What the formats make of a schema file (src/formats/schema-file.ts), handed to the loader so
 * that it names no format: the file's zod schema, each format's proof type and block, how a
 * validated file is completed, and the checks of the blocks' contents.
 */
export interface SchemaFileForm {
  readonly schema: z.ZodType<SchemaFile>;
  readonly proofType: z.ZodType<ProofType>;
  /** Each format's block; a schema listing the proof type must have it when `blockRequired`. */
  readonly blocks: readonly { proofType: ProofType; block: string; blockRequired: boolean }[];
  /** The loaded form of a validated file (what a block leaves to the issuer filled in). */
  complete(file: SchemaFile, urls: Pick<IssuerUrls, 'vct'>): Omit<CredentialSchema, 'file'>;
  /** The problems of the blocks' contents, read from the file as parsed JSON. */
  blockProblems(raw: Record<string, unknown>): string[];
}

/** A schema loader for one form of schema file. */
export function schemaLoader(form: SchemaFileForm) {
  const fileLoader = (urls: Pick<IssuerUrls, 'vct'>): ((file: string) => LoadedSchema) => {
    // Made at the first schema this load has to compile: none when every one is in the cache.
    let ajv: Ajv2020 | undefined;
    const compile = (subjectSchema: Record<string, unknown>) => {
      if (!ajv) {
        ajv = new Ajv2020({ allErrors: true, strict: false });
        addFormats(ajv);
      }
      return ajv.compile(subjectSchema);
    };
    return (file) => parseSchemaFile(form, file, compile, urls);
  };
  return {
    /**
     * Loads every `*.json` directly in SCHEMAS_DIR (docs/schemas-and-claims.md); bad files stop
     * start-up (and a reload) with every problem of every file in one SchemaFileError (one line
     * each). `urls` gives the default `sdJwt.vct` (`IssuerUrls.vct`).
     */
    loadSchemas(dir: string, urls: Pick<IssuerUrls, 'vct'>): SchemaRegistry {
      let names: string[];
      try {
        names = readdirSync(dir, { withFileTypes: true })
          .filter((e) => e.isFile() && e.name.endsWith('.json'))
          .map((e) => e.name)
          .sort();
      } catch (err) {
        throw new SchemaFileError([
          { file: dir, message: `cannot read SCHEMAS_DIR (${(err as Error).message})` },
        ]);
      }
      const loader = fileLoader(urls);
      const schemas = new Map<string, LoadedSchema>();
      const problems: SchemaFileProblem[] = [];
      for (const name of names) {
        const file = join(dir, name);
        let schema: LoadedSchema;
        try {
          schema = loader(file);
        } catch (err) {
          if (!(err instanceof SchemaFileError)) throw err;
          problems.push(...err.problems);
          continue;
        }
        const other = schemas.get(schema.schemaId);
        if (other)
          problems.push({ file, message: `schemaId ${schema.schemaId} is also defined in ${other.file}` });
        else schemas.set(schema.schemaId, schema);
      }
      if (problems.length > 0) throw new SchemaFileError(problems);
      return new SchemaRegistry(schemas);
    },
    /** Loads one schema file as `loadSchemas` does (`admin schemas validate`); throws SchemaFileError. */
    loadSchemaFile(file: string, urls: Pick<IssuerUrls, 'vct'>): LoadedSchema {
      return fileLoader(urls)(file);
    },
  };
}

function parseSchemaFile(
  form: SchemaFileForm,
  file: string,
  compile: (subjectSchema: Record<string, unknown>) => ValidateFunction,
  urls: Pick<IssuerUrls, 'vct'>,
): LoadedSchema {
  const fail = (messages: string[]) => new SchemaFileError(messages.map((message) => ({ file, message })));
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw fail([`not valid JSON (${(err as Error).message})`]);
  }
  const parsed = form.schema.safeParse(raw);
  // Every problem in one pass: the checks below read their own part of the file, so they run
  // even when another part fails the format (docs/schemas-and-claims.md "Reloading schemas").
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  const parts: FileParts = parsed.success ? { ...parsed.data } : partsOf(form, raw);
  for (const f of form.blocks) {
    if (f.blockRequired && parts.proofTypes?.includes(f.proofType) && !parts[f.block])
      problems.push(`${f.block}: required when proofTypes lists ${f.proofType}`);
  }
  let validate: ValidateFunction | undefined;
  if (parts.credentialSubject) {
    const subjectSchema = withoutSubjectId(parts.credentialSubject);
    const properties = (subjectSchema as { properties?: Record<string, unknown> }).properties ?? {};
    const reserved = RESERVED_CLAIMS.filter((c) => c in properties);
    if (reserved.length > 0) {
      problems.push(`credentialSubject.properties: reserved claim names ${reserved.join(', ')}`);
    }
    try {
      validate = compiledValidator(subjectSchema, compile);
    } catch (err) {
      problems.push(`credentialSubject: not a valid JSON Schema (${(err as Error).message})`);
    }
  }
  if (isRecord(raw)) problems.push(...form.blockProblems(raw));
  if (!parsed.success || problems.length > 0 || !validate) throw fail(problems);
  const data = form.complete(parsed.data, urls);
  const validClaims = validate;
  return {
    ...data,
    title: data.title ?? data.schemaId,
    file,
    claimProblems(claims: Record<string, unknown>): ClaimsProblem[] {
      return [
        ...RESERVED_CLAIMS.filter((c) => Object.hasOwn(claims, c)).map((claim) => ({
          claim,
          message: 'reserved claim name',
        })),
        ...this.validateClaims(claims),
      ];
    },
    validateClaims(claims: unknown): ClaimsProblem[] {
      if (validClaims(claims)) return [];
      return (validClaims.errors ?? []).map((e) => {
        const missing = (e.params as { missingProperty?: string; additionalProperty?: string }) ?? {};
        const path = e.instancePath.replace(/^\//, '').replaceAll('/', '.');
        const claim =
          missing.missingProperty ?? missing.additionalProperty ?? (path || '(credentialSubject)');
        // An enum names its allowed values (the admin fixing a CSV cell needs them).
        const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues;
        const message =
          e.keyword === 'enum' && Array.isArray(allowed)
            ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`
            : (e.message ?? 'invalid');
        return {
          claim: path && (missing.missingProperty || missing.additionalProperty) ? `${path}.${claim}` : claim,
          message,
        };
      });
    },
  };
}

/**
 * Compiled claims validators by the SHA-256 of their JSON Schema's text, for the whole process: the
 * tenants of a deployment (docs/several-issuers.md "Idle tenants") mostly load the same schema files, and a
 * compiled validator is the dearest part of loading one, in time and in memory. A validator
 * depends on its schema's text alone (every loader's Ajv has the same options and formats), and
 * it is called synchronously with its `errors` read at once, so sharing one is safe.
 */
const validators = new Map<string, ValidateFunction>();
// Distinct schemas a process compiles: far fewer unless schema files keep changing; then start over.
const MAX_VALIDATORS = 1000;

function compiledValidator(
  subjectSchema: Record<string, unknown>,
  compile: (subjectSchema: Record<string, unknown>) => ValidateFunction,
): ValidateFunction {
  const key = hash('sha256', JSON.stringify(subjectSchema), 'base64url');
  let validate = validators.get(key);
  if (!validate) {
    validate = compile(subjectSchema);
    if (validators.size >= MAX_VALIDATORS) validators.clear();
    validators.set(key, validate);
  }
  return validate;
}

/**
 * The subject's `id` is the holder DID, written by the issuer, never a claim (claims arrive without
 * it), so a schema that lists it (as Iden3 JSON schemas do) is validated without it.
 */
function withoutSubjectId(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = schema.properties as Record<string, unknown> | undefined;
  if (!properties || !('id' in properties)) return schema;
  const { id: _id, ...rest } = properties;
  const required = Array.isArray(schema.required)
    ? schema.required.filter((r) => r !== 'id')
    : schema.required;
  return { ...schema, properties: rest, ...(required === undefined ? {} : { required }) };
}

/** The parts of a schema file the loader's own checks read. */
type FileParts = {
  proofTypes?: readonly string[] | undefined;
  credentialSubject?: Record<string, unknown> | undefined;
} & { [block: string]: unknown };

const isRecord = (raw: unknown): raw is Record<string, unknown> =>
  typeof raw === 'object' && raw !== null && !Array.isArray(raw);

/** The parts of a file that fails the format which are right on their own, for the other checks. */
function partsOf(form: SchemaFileForm, raw: unknown): FileParts {
  if (!isRecord(raw)) return {};
  const part = <T>(schema: z.ZodType<T>, value: unknown): T | undefined => {
    const r = schema.safeParse(value);
    return r.success ? r.data : undefined;
  };
  return {
    proofTypes: part(z.array(form.proofType).min(1), raw.proofTypes),
    credentialSubject: part(SchemaFileBaseSchema.shape.credentialSubject, raw.credentialSubject),
    ...Object.fromEntries(form.blocks.map((f) => [f.block, raw[f.block]])),
  };
}

export class SchemaRegistry {
  readonly #source: () => ReadonlyMap<string, LoadedSchema>;

  /** A fixed set, or (`SchemaCatalog.schemas`) a view of whichever set is current. */
  constructor(byId: ReadonlyMap<string, LoadedSchema> | (() => ReadonlyMap<string, LoadedSchema>)) {
    this.#source = typeof byId === 'function' ? byId : () => byId;
  }

  private get byId(): ReadonlyMap<string, LoadedSchema> {
    return this.#source();
  }

  /** The schemas by id (a live view reads the current set). */
  entries(): ReadonlyMap<string, LoadedSchema> {
    return this.byId;
  }

  all(): LoadedSchema[] {
    return [...this.byId.values()];
  }

  get(schemaId: string): LoadedSchema | undefined {
    return this.byId.get(schemaId);
  }

  /** 404 for an unknown schema (docs/interface.md "issue-vc"). */
  require(schemaId: string): LoadedSchema {
    const schema = this.byId.get(schemaId);
    if (!schema)
      throw new AppError('NOT_FOUND', `schemaId: ${unknownSchema(schemaId)}`, { field: 'schemaId' });
    return schema;
  }

  /** Throws 422 naming every failing claim; nothing is signed for such claims. */
  assertClaims(schema: LoadedSchema, claims: Record<string, unknown>): void {
    const problems = schema.claimProblems(claims);
    if (problems.length > 0) {
      throw new AppError(
        'CLAIMS_INVALID',
        `claims do not fit schema ${schema.schemaId}: ${problems.map((p) => `${p.claim} ${p.message}`).join('; ')}`,
        { schemaId: schema.schemaId, claims: problems },
      );
    }
  }

  /** Schemas matching the optional filters of /available-vc, with the proof types each offers. */
  select(filter: {
    schemaId?: string | undefined;
    proofType?: ProofType | undefined;
  }): Array<{ schema: LoadedSchema; proofType: ProofType }> {
    const out: Array<{ schema: LoadedSchema; proofType: ProofType }> = [];
    for (const schema of this.byId.values()) {
      if (filter.schemaId !== undefined && schema.schemaId !== filter.schemaId) continue;
      for (const proofType of schema.proofTypes) {
        if (filter.proofType !== undefined && proofType !== filter.proofType) continue;
        out.push({ schema, proofType });
      }
    }
    return out;
  }
}
