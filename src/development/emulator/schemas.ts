import { createPublicKey } from 'node:crypto';
import { z } from 'zod';
import { BJJ_SIG_2021_NAMES } from '../../formats/iden3-bjj/names.js';
import { SD_JWT_VC_NAMES } from '../../formats/sd-jwt-vc/names.js';
// docs/interface.md "Direct issuance": an individual recipient's address; the same rule the issuer applies before calling.
import { isRoleAddress } from '../../issuance/recipient-email.js';
import { invalidParameter } from './errors.js';

export { isRoleAddress };

export const EmailBodySchema = z.object({
  email: z
    .email()
    .max(254)
    .refine((email) => !isRoleAddress(email), 'a role or shared address, not an individual one'),
});
export type EmailBody = z.infer<typeof EmailBodySchema>;

const base64Field = (bytes?: number) => {
  const field = z.base64('not standard base64').min(1, 'required');
  return bytes === undefined
    ? field
    : field.refine((v) => Buffer.from(v, 'base64').length === bytes, `must decode to ${bytes} bytes`);
};

// The ephemeral key is a DER SPKI (docs/security.md); parsing it catches an issuer sending raw or hex keys.
// X25519, the wire default, has one fixed 12-byte prefix, so its check needs no key parse.
const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const isSpki = (b64: string): boolean => {
  const der = Buffer.from(b64, 'base64');
  if (der.length === 44 && der.subarray(0, 12).equals(X25519_SPKI_PREFIX)) return true;
  try {
    createPublicKey({ key: der, format: 'der', type: 'spki' });
    return true;
  } catch {
    return false;
  }
};

// The interface's proof types (the service knows no others; an mdoc never reaches it).
const SERVICE_PROOF_TYPES = [SD_JWT_VC_NAMES.proofType, BJJ_SIG_2021_NAMES.proofType] as const;

// The body of `POST /dstorage/vcs` as the service checks it: the encrypted envelope plus its
// metadata; all fields required (docs/interface.md "Direct issuance"). AES-256-GCM: 12-byte IV, 16-byte tag. The emulator keeps
// its own copy of the rule on purpose: it is the other side of the wire.
export const VcUploadSchema = z.object({
  holderDid: z.string().regex(/^did:[a-z0-9]+:\S+$/, 'must be a DID'),
  schemaId: z.string().min(1, 'required').max(256),
  expiresAt: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time' }),
  data: base64Field(),
  iv: base64Field(12),
  authTag: base64Field(16),
  encryptedKey: base64Field().refine(isSpki, 'must be the base64 of a DER SubjectPublicKeyInfo'),
  externalId: z.string().min(1, 'required').max(256),
  // Beside the envelope fields, as the reference issuer sends it; recorded, optional.
  proofType: z.enum(SERVICE_PROOF_TYPES, `must be ${SERVICE_PROOF_TYPES.join(' or ')}`).optional(),
});
export type VcUpload = z.infer<typeof VcUploadSchema>;

export const FaultBodySchema = z.object({
  route: z.enum(['initialize-user', 'dstorage']),
  count: z.int().min(0).max(1000),
  status: z.int().min(400).max(599).optional(),
});
export type FaultBody = z.infer<typeof FaultBodySchema>;

/** Parses at the edge; the 400 names the first offending field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue || issue.path.length === 0) throw invalidParameter('body', 'must be a JSON object');
  const field = issue.path.join('.');
  if (issue.code !== 'invalid_type') throw invalidParameter(field, issue.message);
  const missing = valueAt(body, issue.path) === undefined;
  throw invalidParameter(field, missing ? 'required' : `must be a ${issue.expected}`);
}

function valueAt(body: unknown, path: readonly PropertyKey[]): unknown {
  let value = body;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
