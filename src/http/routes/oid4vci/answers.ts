import { z } from 'zod';
import { ErrorBodySchema, OAuthErrorBodySchema } from '../responses.js';
import { type Route, TAGS } from '../route.js';

/** What the OpenAPI document says the OpenID4VCI channel's public routes answer. */

/**
 * The answers of the channel are the specifications' objects, which may carry members beyond the ones
 * named here (OpenID4VCI 1.0 §12.2.4, RFC 8414 §2): loose objects.
 */
export const CredentialIssuerMetadataSchema = z.looseObject({
  credential_issuer: z.string(),
  credential_endpoint: z.string(),
  nonce_endpoint: z.string().optional(),
  credential_configurations_supported: z.record(z.string(), z.looseObject({ format: z.string() })),
});
export const AuthorizationServerMetadataSchema = z.looseObject({
  issuer: z.string(),
  token_endpoint: z.string(),
});
export const CredentialOfferObjectSchema = z.looseObject({
  credential_issuer: z.string(),
  credential_configuration_ids: z.array(z.string()),
  grants: z.record(z.string(), z.unknown()),
});
export const TokenAnswerSchema = z.looseObject({
  access_token: z.string(),
  token_type: z.enum(['Bearer', 'DPoP']),
  expires_in: z.number().int(),
});
export const NonceAnswerSchema = z.looseObject({ c_nonce: z.string() });
export const CredentialAnswerSchema = z.looseObject({
  credentials: z.array(z.looseObject({ credential: z.string() })),
  /** OpenID4VCI 1.0 §11: unless OID4VCI_NOTIFICATIONS=off. */
  notification_id: z.string().optional(),
});
/** OpenID4VCI 1.0 §8.3 / §9.2: the claims are not ready; poll the deferred credential endpoint. */
export const DeferredAnswerSchema = z.looseObject({
  transaction_id: z.string(),
  interval: z.number().int(),
});

/** A refused protocol request: RFC 6749 §5.2's error body, or the kit's for a body it cannot read. */
const PROTOCOL_ERRORS: Route['doc']['responses'] = {
  400: {
    description: 'OAuth 2.0 error (RFC 6749 §5.2), or the kit error body for a body it cannot read',
    contentType: 'application/json',
    schema: z.union([OAuthErrorBodySchema, ErrorBodySchema]),
  },
  401: {
    description: 'A missing or bad access token or DPoP proof (RFC 6750 §3.1, RFC 9449 §7.1)',
    contentType: 'application/json',
    schema: OAuthErrorBodySchema,
  },
};

/** The 200 of a public route: JSON unless it says its media types; none without an answer (a 204). */
function answer200(
  summary: string,
  answer: z.ZodType | undefined,
  contentTypes: readonly string[] | undefined,
): Route['doc']['responses'] {
  if (!answer) return {};
  return { 200: { description: summary, contentType: contentTypes ?? 'application/json', schema: answer } };
}

export const publicRoute = (
  route: Omit<Route, 'group' | 'auth' | 'doc'> & {
    operationId: string;
    summary: string;
    /** The 200's body; none for an endpoint that answers 204. */
    answer?: z.ZodType;
    /** Media types of the answer, when more than JSON (signed metadata: `application/jwt`). */
    contentTypes?: readonly string[];
    /** Answers OAuth 2.0 errors (token and credential endpoints). */
    protocol?: true;
    /** Its other answers (a 202 deferral, a 204), beside the 200 of `answer`. */
    more?: Route['doc']['responses'];
    errors?: Route['doc']['errors'];
  },
): Route => ({
  method: route.method,
  path: route.path,
  group: 'public',
  auth: 'none',
  ...(route.form ? { form: true as const } : {}),
  ...(route.jwtBody ? { jwtBody: true as const } : {}),
  doc: {
    operationId: route.operationId,
    summary: route.summary,
    tags: TAGS.public,
    responses: {
      ...answer200(route.summary, route.answer, route.contentTypes),
      ...(route.more ?? {}),
      ...(route.protocol ? PROTOCOL_ERRORS : {}),
    },
    ...(route.errors ? { errors: route.errors } : {}),
  },
  handler: route.handler,
});
