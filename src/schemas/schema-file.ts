import { z } from 'zod';
import { Iden3BlockSchema } from '../formats/iden3-bjj/schema-block.js';
import { MdocBlockSchema } from '../formats/mso-mdoc/schema-block.js';
import { SD_JWT_VC } from '../formats/sd-jwt-vc/names.js';
import { SdJwtBlockSchema } from '../formats/sd-jwt-vc/schema-block.js';
import { ProofTypeSchema } from '../model.js';

export {
  DisclosureFrameSchema,
  type TypeDisplay,
  TypeDisplaySchema,
} from '../formats/sd-jwt-vc/schema-block.js';

/** Claims that can never come from claim data (docs/schemas-and-claims.md). */
export const RESERVED_CLAIMS = [
  'cnf',
  'exp',
  'iat',
  'id',
  'iss',
  'nonce',
  'status',
  'sub',
  'vct',
  'vct#integrity',
] as const;

// docs/schemas-and-claims.md: one JSON file per credential schema in SCHEMAS_DIR (a contract).
export const ClaimsSourceSchema = z.discriminatedUnion('provider', [
  z.object({ provider: z.literal('sqlite') }),
  z.object({
    provider: z.literal('http'),
    url: z.url({ protocol: /^https?$/ }),
    timeoutMs: z.number().int().positive().max(60_000).default(3000),
    headers: z.record(z.string(), z.string()).optional(),
  }),
  // The module's path: `path` (or `module`), relative to SCHEMAS_DIR.
  z
    .object({
      provider: z.literal('module'),
      path: z.string().min(1).optional(),
      module: z.string().min(1).optional(),
    })
    .refine((v) => v.path !== undefined || v.module !== undefined, {
      message: 'module provider needs path',
      path: ['path'],
    })
    .transform((v) => ({ provider: v.provider, path: (v.path ?? v.module)! })),
]);
export type ClaimsSource = z.infer<typeof ClaimsSourceSchema>;

export const SchemaFileSchema = z
  .object({
    schemaId: z.string().min(1).max(255),
    // Optional with defaults (title: the schemaId; one year; the built-in sqlite claims source);
    // a value that is present must still be right.
    title: z.string().min(1).optional(),
    description: z.string().default(''),
    proofTypes: z.array(ProofTypeSchema).min(1),
    expiresInSeconds: z.number().int().positive().default(31_536_000),
    credentialSubject: z.object({ type: z.literal('object') }).loose(),
    claims: ClaimsSourceSchema.default({ provider: 'sqlite' }),
    // Each format's block (src/formats/<format>/schema-block.ts).
    sdJwt: SdJwtBlockSchema.optional(),
    iden3: Iden3BlockSchema.optional(),
    mdoc: MdocBlockSchema.optional(),
    /**
     * Direct credentials of this schema are re-issued `beforeExpirySeconds` before they expire
     * (docs/schemas-and-claims.md "Renewal"); the previous one is revoked then with `revokePrevious`.
     */
    /**
     * OpenID4VCI: the holder's key must be attested by a trusted key attester
     * (docs/haip.md "Key attestation"); each list, when given, names the `key_storage` /
     * `user_authentication` levels (OpenID4VCI 1.0 Appendix D.2) the attestation must assert one of.
     */
    keyAttestation: z
      .strictObject({
        keyStorage: z.array(z.string().min(1)).min(1).optional(),
        userAuthentication: z.array(z.string().min(1)).min(1).optional(),
      })
      .optional(),
    renewal: z
      .strictObject({
        beforeExpirySeconds: z.number().int().positive(),
        revokePrevious: z.boolean().default(false),
      })
      .optional(),
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
export type SchemaFile = z.infer<typeof SchemaFileSchema>;

/**
 * The answer naming a schema the server does not serve, with how to make it read a new file
 * (docs/schemas-and-claims.md "Reloading schemas"): the server reads SCHEMAS_DIR at start, and
 * again only on a reload (or by itself with SCHEMAS_WATCH=on).
 */
export function unknownSchema(schemaId: string): string {
  return `unknown schema ${schemaId}: not among the schemas this server read from SCHEMAS_DIR; after adding its file there, run \`npm run admin -- schemas reload\` (POST /admin/schemas/reload, or SIGHUP) and try again`;
}

/** A schema file as loaded: the validated file plus where it came from. */
export interface CredentialSchema extends Omit<SchemaFile, 'sdJwt'> {
  /** Absolute path of the schema file (for error messages). */
  readonly file: string;
  /** Always present once loaded, with `vct`: the file's, else `IssuerUrls.vct`. */
  sdJwt: NonNullable<SchemaFile['sdJwt']> & { vct: string };
}
