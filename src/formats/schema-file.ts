import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { RESERVED_CLAIMS, SchemaFileBaseSchema } from '../schemas/schema-file.js';
import { type SchemaFileForm, schemaLoader } from '../schemas/schema-registry.js';
import { BJJ_SIG_2021 } from './iden3-bjj/names.js';
import { Iden3BlockSchema } from './iden3-bjj/schema-block.js';
import { MdocBlockSchema } from './mso-mdoc/schema-block.js';
import { FORMAT_NAMES, PROOF_TYPES } from './names.js';
import { SD_JWT_VC } from './sd-jwt-vc/names.js';
import { SdJwtBlockSchema } from './sd-jwt-vc/schema-block.js';

/**
 * The schema file as the formats make it (docs/schemas-and-claims.md): the loader's base with the
 * proof types of the formats list and each format's block (src/formats/<format>/schema-block.ts).
 * It imports the formats' names and blocks alone, so the admin CLI and `main.ts` load schema
 * files without the format modules.
 */

/** A credential format a schema can be issued in: one per format, in the formats list's order. */
export const ProofTypeSchema = z.enum(PROOF_TYPES);

const { keyAttestation, renewal, ...head } = SchemaFileBaseSchema.shape;

export const SchemaFileSchema = z
  .object({
    ...head,
    proofTypes: z.array(ProofTypeSchema).min(1),
    // Each format's block (src/formats/<format>/schema-block.ts).
    sdJwt: SdJwtBlockSchema.optional(),
    iden3: Iden3BlockSchema.optional(),
    mdoc: MdocBlockSchema.optional(),
    keyAttestation,
    renewal,
  })
  .superRefine((file, ctx) => {
    // OpenID4VCI issues SD-JWT VCs only.
    if (file.keyAttestation && !file.proofTypes.includes(SD_JWT_VC))
      ctx.addIssue({
        code: 'custom',
        path: ['keyAttestation'],
        message: `needs ${SD_JWT_VC} in proofTypes (OpenID4VCI issues SD-JWT VCs)`,
      });
    if (!file.renewal) return;
    // Renewal re-issues direct credentials, which are SD-JWT VCs only.
    if (!file.proofTypes.includes(SD_JWT_VC))
      ctx.addIssue({
        code: 'custom',
        path: ['renewal'],
        message: `needs ${SD_JWT_VC} in proofTypes (renewal re-issues direct credentials)`,
      });
    if (file.renewal.beforeExpirySeconds >= file.expiresInSeconds)
      ctx.addIssue({
        code: 'custom',
        path: ['renewal', 'beforeExpirySeconds'],
        message: 'must be less than expiresInSeconds (a renewed credential would be due again at once)',
      });
  });

const SCHEMA_FILE_FORM: SchemaFileForm = {
  schema: SchemaFileSchema,
  proofType: ProofTypeSchema,
  blocks: FORMAT_NAMES,
  complete: (file, urls) => ({
    ...file,
    sdJwt: { ...file.sdJwt, vct: file.sdJwt?.vct ?? urls.vct(file.schemaId) },
  }),
  blockProblems(raw) {
    const sdJwt = SdJwtBlockSchema.safeParse(raw.sdJwt);
    const frame = sdJwt.success ? sdJwt.data?.disclosureFrame : undefined;
    const reserved = RESERVED_CLAIMS.filter((c) => disclosedNames(frame).has(c));
    return reserved.length > 0 ? [`sdJwt.disclosureFrame: reserved claim names ${reserved.join(', ')}`] : [];
  },
};

export const { loadSchemas, loadSchemaFile } = schemaLoader(SCHEMA_FILE_FORM);

// What the loaders throw, beside them for their callers.
export { SchemaFileError } from '../schemas/schema-registry.js';

/** Top-level claim names a disclosure frame makes disclosable or descends into. */
function disclosedNames(frame: Record<string, unknown> | undefined): Set<string> {
  if (!frame) return new Set();
  const sd = Array.isArray(frame._sd) ? frame._sd.filter((n): n is string => typeof n === 'string') : [];
  return new Set([...sd, ...Object.keys(frame).filter((k) => k !== '_sd' && k !== '_sd_decoy')]);
}

/**
 * The claims source and Iden3 block of a schema file, each when it is right on its own (whatever the
 * rest of the file; the Iden3 block only when `proofTypes` lists its proof type, as the server reads
 * it only then): `admin schemas validate` checks the module and the JSON-LD context of a file
 * that also fails the format, so one run names every problem.
 */
export function schemaFileParts(file: string): {
  claims?: z.infer<typeof SchemaFileSchema.shape.claims> | undefined;
  iden3?: z.infer<typeof SchemaFileSchema.shape.iden3> | undefined;
} {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return {};
  const { claims, iden3, proofTypes } = raw as Record<string, unknown>;
  const shape = SchemaFileSchema.shape;
  const c = shape.claims.safeParse(claims);
  const i = shape.iden3.safeParse(iden3);
  const bjj = Array.isArray(proofTypes) && proofTypes.includes(BJJ_SIG_2021);
  return { claims: c.success ? c.data : undefined, iden3: bjj && i.success ? i.data : undefined };
}
