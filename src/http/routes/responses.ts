import { z } from 'zod';
import { ERROR_STATUS, type ErrorCode } from '../../errors.js';
import type { Route } from './route.js';

/** The error body every error answer carries (docs/interface.md "Errors"). */
export const ErrorBodySchema = z.object({
  code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
  message: z.string(),
  details: z.unknown().optional(),
});

/**
 * The OAuth 2.0 error body of the OpenID4VCI channel (RFC 6749 §5.2, OpenID4VCI 1.0 §8.3.1.2), which
 * its handlers answer instead of `{ code, message }`.
 */
export const OAuthErrorBodySchema = z.object({
  error: z.string(),
  error_description: z.string().optional(),
});

/** A JSON media type: `application/json` or a `+json` one (RFC 6839 §3.1). */
export const isJsonMedia = (media: string): boolean =>
  media === 'application/json' || media.endsWith('+json');

/** A timestamp in an answer: ISO 8601 in UTC, as `Date.toISOString()` writes it. */
export const Timestamp = z.iso.datetime();

/** A revocation nonce in an answer: a decimal string (docs/interface.md "Field limits"). */
export const NonceString = z.string().regex(/^\d{1,16}$/);

/** A credential's status as answers give it: expiry and revocation read together (`status/derived-status.ts`). */
export const DerivedStatusSchema = z.enum(['valid', 'revoked', 'suspended', 'expired']);

/** Where a credential's envelope is: `none` for a credential no envelope was made for (OpenID4VCI). */
export const UploadStateSchema = z.enum(['pending', 'uploaded', 'failed', 'none']);

/** A public JWK as the kit publishes it (RFC 7517 §4; private members never appear). */
export const PublicJwkSchema = z.looseObject({
  kty: z.string(),
  kid: z.string().optional(),
  alg: z.string().optional(),
  use: z.string().optional(),
  crv: z.string().optional(),
  x: z.string().optional(),
  y: z.string().optional(),
  n: z.string().optional(),
  e: z.string().optional(),
  x5c: z.array(z.string()).optional(),
});

/**
 * The error codes a route can answer: the ones its handler names, plus those of its auth, its
 * group (the rate limit), its inputs and the server itself.
 */
export function errorCodes(row: Route): ErrorCode[] {
  const codes = new Set<ErrorCode>(row.doc.errors ?? []);
  if (row.auth === 'api-key' || row.auth === 'admin-api-key') codes.add('FORBIDDEN');
  if (row.group !== 'ops') codes.add('RATE_LIMITED');
  if (row.doc.body || (row.method === 'post' && !row.form)) {
    // Every JSON POST reads its body: malformed JSON, too large, an unread encoding.
    codes.add('INVALID_PARAMETER');
    codes.add('PAYLOAD_TOO_LARGE');
    codes.add('UNSUPPORTED_MEDIA_TYPE');
  }
  if (row.doc.query || row.doc.params) codes.add('INVALID_PARAMETER');
  if (row.auth === 'metrics-token') codes.add('UNAUTHORIZED');
  codes.add('INTERNAL');
  // A draining instance answers every route but the probes with 503.
  if (row.path !== '/healthz' && row.path !== '/readyz') codes.add('UNAVAILABLE');
  return [...codes];
}

/** One documented answer of a route: its media types and, for JSON, the schema of its body. */
export interface DocumentedResponse {
  description: string;
  contentTypes: readonly string[];
  schema?: z.ZodType;
  /** An error answer `{ code, message, details? }`: the codes it may carry. */
  errorCodes?: readonly ErrorCode[];
}

/**
 * Every answer of a route by status: the ones its row describes, then an error body for each
 * status of its error codes that the row does not describe itself. `GET /openapi.json` and the
 * test suite's response check (`middleware/response-contract.ts`) both read this.
 */
export function routeResponses(row: Route): Map<number, DocumentedResponse> {
  const answers = new Map<number, DocumentedResponse>();
  for (const [status, r] of Object.entries(row.doc.responses)) {
    answers.set(Number(status), {
      description: r.description,
      contentTypes: r.contentType || r.schema ? [r.contentType ?? 'application/json'].flat() : [],
      ...(r.schema ? { schema: r.schema } : {}),
    });
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodes(row)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of byStatus) {
    if (answers.has(status)) continue;
    answers.set(status, {
      description: `${codes.join(' or ')} (error body)`,
      contentTypes: ['application/json'],
      schema: errorBodyOf(codes),
      errorCodes: codes,
    });
  }
  return answers;
}

/**
 * The error body schema of one set of codes, built once per process: every app (and the test
 * suite builds hundreds) shares it, and zod compiles a schema's parser on its first parse.
 */
const errorBodies = new Map<string, z.ZodType>();
function errorBodyOf(codes: readonly ErrorCode[]): z.ZodType {
  const key = codes.join(',');
  let schema = errorBodies.get(key);
  if (!schema) {
    schema = ErrorBodySchema.extend({ code: z.enum(codes as [ErrorCode, ...ErrorCode[]]) });
    errorBodies.set(key, schema);
  }
  return schema;
}
