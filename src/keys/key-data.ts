import { z } from 'zod';

/** What a key signs: credentials (and status lists), or the partner JWT (docs/security.md). */
export type KeyPurpose = 'credential-signing' | 'partner-jwt';

/**
 * Where a key file was made: a development start generates `development` keys when KEYS_DIR has
 * none; `keys:generate` writes `production` ones. Files from before the marker existed have none.
 */
export type KeyEnvironment = 'development' | 'production';

const JwkSchema = z.looseObject({
  kty: z.string(),
  kid: z.string().min(1).optional(),
  x5c: z.array(z.base64('not standard base64 (DER certificates, RFC 7517 §4.7)')).min(1).optional(),
});

/**
 * A stored key, as a KEYS_DIR file or a database row's sealed content: its state, and what its
 * backend keeps (src/keys/key-backend.ts `KeyCustody`).
 */
export const KeyFileSchema = z.object({
  purpose: z.enum(['credential-signing', 'partner-jwt']),
  createdAt: z.iso.datetime(),
  retiredAt: z.iso.datetime().optional(),
  environment: z.enum(['development', 'production']).optional(),
  standby: z.boolean().optional(),
  /** A software key: the private key itself (and its chain). */
  privateJwk: JwkSchema.optional(),
  /** A key another backend holds: its public key (and chain), and where the backend finds it. */
  publicJwk: JwkSchema.optional(),
  token: z.looseObject({ backend: z.string().min(1), label: z.string() }).optional(),
});

/** The body of a key file, as stored (a file, or a database row's decrypted content). */
export type KeyData = z.infer<typeof KeyFileSchema>;
