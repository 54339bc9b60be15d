import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { CredentialSubjectSchema } from '../../../issuance/direct-input.js';
import { RecipientEmailSchema } from '../../../issuance/recipient-email.js';
import { boundedText, MAX_ID_BYTES } from '../../../model.js';
import type { Oid4vciChannel } from '../../../oid4vci/channel.js';
import { DEFAULT_OFFER_SECONDS, MAX_OFFER_SECONDS } from '../../../oid4vci/offers.js';
import { parseInput } from '../../middleware/validate.js';
import { auditActor, SchemaIdField } from '../admin/fields.js';
import { ErrorBodySchema, OAuthErrorBodySchema, Timestamp } from '../responses.js';
import { type Route, type RouteFactory, TAGS } from '../route.js';

/**
 * The OpenID4VCI channel's endpoints (docs/interface.md "OpenID4VCI: the wallet door"): none when
 * OID4VCI=off. Each handler turns the Express request into the protocol library's request shape
 * and hands it to `Oid4vciChannel` (src/oid4vci/), which owns every rule.
 */

/** The request as `@openid4vc/oauth2` reads it: DPoP's `htu` is the public URL, so ISSUER_ORIGIN's. */
function requestLike(origin: string, req: Request) {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) headers.set(name, value.join(', '));
  }
  return { method: req.method as 'POST', url: `${origin}${req.path}`, headers };
}

/**
 * Why a path of the channel 404s when OID4VCI=off (the production default; docs/configuration.md
 * `OID4VCI`): the answer names the setting that opens it.
 */
export function oid4vciOffReason(path: string): string | undefined {
  const channelPath =
    path === '/admin/credential-offers' ||
    path.startsWith('/oid4vci/') ||
    path === '/.well-known/openid-credential-issuer' ||
    path === '/.well-known/oauth-authorization-server';
  // The answer's words are published as they were first written, 'door' included.
  return channelPath ? 'the OpenID4VCI door is off here; OID4VCI=on enables it (then restart)' : undefined;
}

const noStore = (res: Response) => res.set('Cache-Control', 'no-store');

const channel = (ctx: AppContext): Oid4vciChannel | undefined => ctx.oid4vci;

/**
 * The answers of the channel are the specifications' objects, which may carry members beyond the ones
 * named here (OpenID4VCI 1.0 §12.2.4, RFC 8414 §2): loose objects.
 */
const CredentialIssuerMetadataSchema = z.looseObject({
  credential_issuer: z.string(),
  credential_endpoint: z.string(),
  nonce_endpoint: z.string().optional(),
  credential_configurations_supported: z.record(z.string(), z.looseObject({ format: z.string() })),
});
const AuthorizationServerMetadataSchema = z.looseObject({
  issuer: z.string(),
  token_endpoint: z.string(),
});
const CredentialOfferObjectSchema = z.looseObject({
  credential_issuer: z.string(),
  credential_configuration_ids: z.array(z.string()),
  grants: z.record(z.string(), z.unknown()),
});
const TokenAnswerSchema = z.looseObject({
  access_token: z.string(),
  token_type: z.enum(['Bearer', 'DPoP']),
  expires_in: z.number().int(),
});
const NonceAnswerSchema = z.looseObject({ c_nonce: z.string() });
const CredentialAnswerSchema = z.looseObject({
  credentials: z.array(z.looseObject({ credential: z.string() })),
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

const publicRoute = (
  route: Omit<Route, 'group' | 'auth' | 'doc'> & {
    operationId: string;
    summary: string;
    answer: z.ZodType;
    /** Answers OAuth 2.0 errors (token and credential endpoints). */
    protocol?: true;
    errors?: Route['doc']['errors'];
  },
): Route => ({
  method: route.method,
  path: route.path,
  group: 'public',
  auth: 'none',
  ...(route.form ? { form: true as const } : {}),
  doc: {
    operationId: route.operationId,
    summary: route.summary,
    tags: TAGS.public,
    responses: {
      200: { description: route.summary, contentType: 'application/json', schema: route.answer },
      ...(route.protocol ? PROTOCOL_ERRORS : {}),
    },
    ...(route.errors ? { errors: route.errors } : {}),
  },
  handler: route.handler,
});

/** `GET /.well-known/openid-credential-issuer` and `/.well-known/oauth-authorization-server`. */
export const oid4vciMetadataRoutes: RouteFactory = (ctx) => {
  const d = channel(ctx);
  if (!d) return [];
  return [
    publicRoute({
      method: 'get',
      path: '/.well-known/openid-credential-issuer',
      operationId: 'openid-credential-issuer',
      summary: 'OpenID4VCI 1.0 credential issuer metadata',
      answer: CredentialIssuerMetadataSchema,
      handler: (_req, res) => {
        res.json(d.issuerMetadata().credentialIssuer);
      },
    }),
    publicRoute({
      method: 'get',
      path: '/.well-known/oauth-authorization-server',
      operationId: 'oauth-authorization-server',
      summary: 'RFC 8414 authorization server metadata (pre-authorized code grant)',
      answer: AuthorizationServerMetadataSchema,
      handler: (_req, res) => {
        res.json(d.authorizationServerMetadata());
      },
    }),
  ];
};

/** The wallet's steps: the offer by reference, token, nonce, credential. */
export const oid4vciWalletRoutes: RouteFactory = (ctx) => {
  const d = channel(ctx);
  if (!d) return [];
  const origin = ctx.config.issuerOrigin;
  return [
    publicRoute({
      method: 'get',
      path: '/oid4vci/offers/:offerId',
      operationId: 'oid4vci-offer',
      summary: 'A credential offer by reference (OpenID4VCI 1.0 §4.1.3)',
      answer: CredentialOfferObjectSchema,
      errors: ['NOT_FOUND'],
      handler: async (req, res) => {
        noStore(res).json(await d.offerObject(String(req.params.offerId)));
      },
    }),
    publicRoute({
      method: 'post',
      path: '/oid4vci/token',
      form: true,
      operationId: 'oid4vci-token',
      summary: 'Token endpoint: pre-authorized code → access token (OpenID4VCI 1.0 §6)',
      answer: TokenAnswerSchema,
      protocol: true,
      handler: async (req, res) => {
        const body = (req.body ?? {}) as Record<string, unknown>;
        const answer = await d.token(requestLike(origin, req), body);
        noStore(res).set(answer.headers).json(answer.body);
      },
    }),
    publicRoute({
      method: 'post',
      path: '/oid4vci/nonce',
      operationId: 'oid4vci-nonce',
      summary: 'Nonce endpoint: a fresh c_nonce (OpenID4VCI 1.0 §7)',
      answer: NonceAnswerSchema,
      handler: async (_req, res) => {
        noStore(res).json(await d.nonce());
      },
    }),
    publicRoute({
      method: 'post',
      path: '/oid4vci/credential',
      operationId: 'oid4vci-credential',
      summary: 'Credential endpoint: one SD-JWT VC bound to the proof key (OpenID4VCI 1.0 §8)',
      answer: CredentialAnswerSchema,
      protocol: true,
      handler: async (req, res) => {
        const body = (req.body ?? {}) as Record<string, unknown>;
        const answer = await d.credential(requestLike(origin, req), body);
        noStore(res).set(answer.headers).json(answer.body);
      },
    }),
  ];
};

// docs/interface.md "OpenID4VCI: the wallet door": `userId` (the claims provider's) or `email`.
export const CredentialOfferBodySchema = z
  .object({
    schemaId: SchemaIdField,
    userId: boundedText(MAX_ID_BYTES).optional(),
    email: RecipientEmailSchema.optional(),
    claims: CredentialSubjectSchema.optional(),
    txCode: z.boolean().default(false),
    expiresInSeconds: z.number().int().min(30).max(MAX_OFFER_SECONDS).default(DEFAULT_OFFER_SECONDS),
    reason: z.string().min(1).max(1000).optional(),
  })
  .strict()
  .superRefine((value, c) => {
    const given = (value.userId !== undefined ? 1 : 0) + (value.email !== undefined ? 1 : 0);
    if (given !== 1)
      c.addIssue({
        code: 'custom',
        path: [value.userId === undefined ? 'userId' : 'email'],
        message: given === 0 ? 'give userId or email' : 'not with email: give one of them',
      });
    if (value.email !== undefined && value.claims === undefined)
      c.addIssue({ code: 'custom', path: ['claims'], message: 'required with email' });
  });

/** `POST /admin/credential-offers`: an offer for a wallet to take (QR code or link). */
export const credentialOffersRoute: RouteFactory = (ctx) => {
  const d = channel(ctx);
  if (!d) return [];
  return {
    method: 'post',
    path: '/admin/credential-offers',
    group: 'admin',
    auth: 'admin-api-key',
    doc: {
      operationId: 'admin-credential-offer',
      summary: 'Create an OpenID4VCI credential offer (pre-authorized code)',
      tags: TAGS.admin,
      body: CredentialOfferBodySchema,
      responses: {
        201: {
          description: '`{ offerId, credentialOffer, offerUri, txCode?, expiresAt }`',
          contentType: 'application/json',
          schema: z.object({
            offerId: z.string(),
            credentialOffer: CredentialOfferObjectSchema,
            /** `openid-credential-offer://?credential_offer_uri=…`, for a QR code or a link. */
            offerUri: z.string(),
            /** The transaction code, when asked for: given to the holder apart from the offer. */
            txCode: z.string().optional(),
            expiresAt: Timestamp,
          }),
        },
      },
      errors: ['NOT_FOUND', 'CLAIMS_INVALID', 'UPSTREAM_UNAVAILABLE'],
    },
    handler: async (req: Request, res: Response) => {
      const body = parseInput(CredentialOfferBodySchema, req.body);
      const offer = await d.createOffer({ ...body, audit: auditActor(res, body.reason) });
      noStore(res)
        .status(201)
        .json({ ...offer, expiresAt: offer.expiresAt.toISOString() });
    },
  };
};
