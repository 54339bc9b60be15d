import { CompactEncrypt, importJWK, type KeyObject } from 'jose';
import { z } from 'zod';
import type { ProtocolAnswer } from './answer.js';
import { invalidEncryptionParameters } from './errors.js';

/**
 * Credential response encryption (OpenID4VCI 1.0 §10, §8.2 `credential_response_encryption`):
 * the wallet names a public key and a content encryption; the credential response then goes back
 * as a compact JWE (`application/jwt`), ECDH-ES on P-256 with A128GCM or A256GCM, made by `jose`.
 */

export const RESPONSE_ENCRYPTION_ALGS = ['ECDH-ES'] as const;
export const RESPONSE_ENCRYPTION_ENCS = ['A128GCM', 'A256GCM'] as const;

/** §12.2.4 `credential_response_encryption` of the credential issuer metadata. */
export const responseEncryptionMetadata = (required: boolean) => ({
  alg_values_supported: [...RESPONSE_ENCRYPTION_ALGS],
  enc_values_supported: [...RESPONSE_ENCRYPTION_ENCS],
  encryption_required: required,
});

// §8.2: `jwk` (its `alg` the key agreement) and `enc`; an `alg` beside them (drafts before 1.0)
// is taken when it says the same. No compression is offered, so `zip` is refused.
const RequestedEncryptionSchema = z.object({
  jwk: z.looseObject({
    kty: z.literal('EC', 'must be an EC key'),
    crv: z.literal('P-256', 'must be a P-256 key'),
    x: z.string(),
    y: z.string(),
    d: z.never('must be a public key').optional(),
    alg: z.enum(RESPONSE_ENCRYPTION_ALGS, 'must be ECDH-ES').optional(),
    kid: z.string().optional(),
  }),
  alg: z.enum(RESPONSE_ENCRYPTION_ALGS, 'must be ECDH-ES').optional(),
  enc: z.enum(RESPONSE_ENCRYPTION_ENCS, `must be one of ${RESPONSE_ENCRYPTION_ENCS.join(', ')}`),
  zip: z.never('no compression is offered').optional(),
});

/** How to encrypt one credential response. */
export interface ResponseEncryption {
  key: Awaited<ReturnType<typeof importJWK>> | KeyObject;
  enc: (typeof RESPONSE_ENCRYPTION_ENCS)[number];
  kid: string | undefined;
}

/**
 * The request's `credential_response_encryption`, checked, and the request without it (what the
 * protocol library parses). Absent while required, or not one we can use, is
 * `invalid_encryption_parameters` (§8.3.1.2), before anything is issued.
 */
export async function requestedEncryption(
  body: Record<string, unknown>,
  required: boolean,
): Promise<{ encryption: ResponseEncryption | undefined; request: Record<string, unknown> }> {
  const { credential_response_encryption: given, ...request } = body;
  if (given === undefined) {
    if (required) throw invalidEncryptionParameters('this issuer requires credential_response_encryption');
    return { encryption: undefined, request };
  }
  const parsed = RequestedEncryptionSchema.safeParse(given);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = ['credential_response_encryption', ...issue.path].join('.');
    throw invalidEncryptionParameters(`${path}: ${issue.message}`);
  }
  const { jwk, enc } = parsed.data;
  try {
    const key = await importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, 'ECDH-ES');
    return { encryption: { key, enc, kid: jwk.kid }, request };
  } catch {
    throw invalidEncryptionParameters('credential_response_encryption.jwk: not a point on P-256');
  }
}

/** The answer: the JSON body as it is, or encrypted to the wallet's key as a compact JWE. */
export async function answerWith(
  body: Record<string, unknown>,
  encryption: ResponseEncryption | undefined,
): Promise<ProtocolAnswer> {
  if (!encryption) return { body, headers: {} };
  const jwe = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(body)))
    .setProtectedHeader({
      alg: 'ECDH-ES',
      enc: encryption.enc,
      ...(encryption.kid ? { kid: encryption.kid } : {}),
    })
    .encrypt(encryption.key);
  return { body, headers: {}, jwt: jwe };
}
