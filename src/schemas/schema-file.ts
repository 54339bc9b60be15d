import { z } from 'zod';
import type { ProofType } from '../model.js';

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

/**
 * The schema file's parts that are no format's (docs/schemas-and-claims.md). The formats list
 * completes it (src/formats/schema-file.ts `SchemaFileSchema`): the proof types it knows in place
 * of `proofTypes` here, each format's block, and the checks between them.
 */
export const SchemaFileBaseSchema = z.object({
  schemaId: z.string().min(1).max(255),
  // Optional with defaults (title: the schemaId; one year; the built-in sqlite claims source);
  // a value that is present must still be right.
  title: z.string().min(1).optional(),
  description: z.string().default(''),
  proofTypes: z.array(z.string()).min(1),
  expiresInSeconds: z.number().int().positive().default(31_536_000),
  credentialSubject: z.object({ type: z.literal('object') }).loose(),
  claims: ClaimsSourceSchema.default({ provider: 'sqlite' }),
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
  /**
   * Direct credentials of this schema are re-issued `beforeExpirySeconds` before they expire
   * (docs/schemas-and-claims.md "Renewal"); the previous one is revoked then with `revokePrevious`.
   */
  renewal: z
    .strictObject({
      beforeExpirySeconds: z.number().int().positive(),
      revokePrevious: z.boolean().default(false),
    })
    .optional(),
});

/**
 * Each format's block of a schema file as read, keyed by the block's name: each format's
 * `schema-block.ts` adds its own (declaration merging), so this floor names no format.
 */
// biome-ignore lint/suspicious/noEmptyInterface: each format's schema-block.ts adds its member.
export interface SchemaFileBlocks {}

/** Each format's block once loaded, where loading completes it (SD-JWT VC: its `vct`). */
// biome-ignore lint/suspicious/noEmptyInterface: a format's schema-block.ts may add its member.
export interface LoadedSchemaBlocks {}

/** A schema file as validated. */
export type SchemaFile = Omit<z.infer<typeof SchemaFileBaseSchema>, 'proofTypes'> & {
  proofTypes: ProofType[];
} & SchemaFileBlocks;

/**
 * The answer naming a schema the server does not serve, with how to make it read a new file
 * (docs/schemas-and-claims.md "Reloading schemas"): the server reads SCHEMAS_DIR at start, and
 * again only on a reload (or by itself with SCHEMAS_WATCH=on).
 */
export function unknownSchema(schemaId: string): string {
  return `unknown schema ${schemaId}: not among the schemas this server read from SCHEMAS_DIR; after adding its file there, run \`npm run admin -- schemas reload\` (POST /admin/schemas/reload, or SIGHUP) and try again`;
}

/** A schema file as loaded: the validated file, its blocks completed, plus where it came from. */
export type CredentialSchema = Omit<SchemaFile, keyof LoadedSchemaBlocks> &
  LoadedSchemaBlocks & {
    /** Absolute path of the schema file (for error messages). */
    readonly file: string;
  };
