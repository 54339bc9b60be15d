import type { RequestLike } from '@openid4vc/oauth2';
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { formatsServing } from '../../../formats/index.js';
import type { IssuerUrls } from '../../../identity/issuer-identity.js';
import { CredentialSubjectSchema } from '../../../issuance/direct-input.js';
import { RecipientEmailSchema } from '../../../issuance/recipient-email.js';
import { boundedText, MAX_ID_BYTES, type ProofType } from '../../../model.js';
import type { Oid4vciChannel } from '../../../oid4vci/channel.js';
import { DEFAULT_OFFER_SECONDS, MAX_OFFER_SECONDS } from '../../../oid4vci/offers.js';
import type { ProtocolAnswer } from '../../../oid4vci/parts.js';
import { parseInput } from '../../middleware/validate.js';
import { auditActor, SchemaIdField } from '../admin/fields.js';
import { Timestamp } from '../responses.js';
import { type Route, type RouteFactory, TAGS } from '../route.js';
import {
  AuthorizationServerMetadataSchema,
  CredentialAnswerSchema,
  CredentialIssuerMetadataSchema,
  CredentialOfferObjectSchema,
  DeferredAnswerSchema,
  NonceAnswerSchema,
  publicRoute,
  TokenAnswerSchema,
} from './answers.js';

/**
 * The OpenID4VCI channel's endpoints (docs/interface.md "OpenID4VCI: the wallet door"): none when
 * OID4VCI=off. Each handler turns the Express request into the protocol library's request shape
 * and hands it to `Oid4vciChannel` (src/oid4vci/), which owns every rule.
 */

/** The request as `@openid4vc/oauth2` reads it: DPoP's `htu` is the public URL, so ISSUER_ORIGIN's. */
export function requestLike(urls: IssuerUrls, req: Request) {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) headers.set(name, value.join(', '));
  }
  return { method: req.method as 'POST', url: urls.at(req.path), headers };
}

/**
 * Why a path of the channel 404s when OID4VCI=off (the production default; docs/configuration.md
 * `OID4VCI`): the answer names the setting that opens it.
 */
export function oid4vciOffReason(path: string): string | undefined {
  const channelPath =
    path === '/admin/credential-offers' ||
    path.startsWith('/admin/deferred-credentials/') ||
    path.startsWith('/oid4vci/') ||
    path === '/.well-known/openid-credential-issuer' ||
    path === '/.well-known/oauth-authorization-server';
  // The answer's words are published as they were first written, 'door' included.
  return channelPath ? 'the OpenID4VCI door is off here; OID4VCI=on enables it (then restart)' : undefined;
}

export const noStore = (res: Response) => res.set('Cache-Control', 'no-store');

const channel = (ctx: AppContext): Oid4vciChannel | undefined => ctx.oid4vci;

/** A step answering with a protocol answer (token, credential): its body and headers, never cached. */
export const protocolStep =
  (
    urls: IssuerUrls,
    step: (
      request: RequestLike,
      body: Record<string, unknown>,
      encrypted?: string,
    ) => Promise<ProtocolAnswer>,
  ): Route['handler'] =>
  async (req, res) => {
    // A route with `jwtBody` gets an `application/jwt` body as its text (an encrypted request).
    const answer =
      typeof req.body === 'string'
        ? await step(requestLike(urls, req), {}, req.body)
        : await step(requestLike(urls, req), (req.body ?? {}) as Record<string, unknown>);
    noStore(res).set(answer.headers);
    if (answer.status === 204) res.status(204).end();
    // A Buffer, so Express adds no `; charset=utf-8` to the media type (OpenID4VCI 1.0 §8.3).
    else if (answer.jwt !== undefined)
      res
        .status(answer.status ?? 200)
        .type('application/jwt')
        .send(Buffer.from(answer.jwt));
    else res.status(answer.status ?? 200).json(answer.body);
  };

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
      contentTypes: ['application/json', 'application/jwt'],
      // OpenID4VCI 1.0 §12.2.3: the signed form for a wallet that asks for it, in x5c mode.
      handler: async (req, res) => {
        if (d.signsMetadata) res.vary('Accept');
        const signed =
          d.signsMetadata && req.accepts(['application/json', 'application/jwt']) === 'application/jwt'
            ? await d.signedIssuerMetadata()
            : undefined;
        if (signed !== undefined) res.type('application/jwt').send(signed);
        else res.json(d.issuerMetadata().credentialIssuer);
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
  const { urls } = ctx.identity;
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
      handler: protocolStep(urls, (request, body) => d.token(request, body)),
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
      summary:
        'Credential endpoint: one SD-JWT VC per proof key (OpenID4VCI 1.0 §8), as a JWE (`application/jwt`) when the wallet asks for encryption (§10)',
      answer: CredentialAnswerSchema,
      contentTypes: ['application/json', 'application/jwt'],
      more: DEFERRED,
      protocol: true,
      jwtBody: true,
      handler: protocolStep(urls, (request, body, encrypted) => d.credential(request, body, encrypted)),
    }),
    publicRoute({
      method: 'post',
      path: '/oid4vci/deferred-credential',
      operationId: 'oid4vci-deferred-credential',
      summary:
        'Deferred credential endpoint: the credential once its claims are there (OpenID4VCI 1.0 §9), as a JWE (`application/jwt`) when the wallet asks for encryption (§10)',
      answer: CredentialAnswerSchema,
      contentTypes: ['application/json', 'application/jwt'],
      more: DEFERRED,
      protocol: true,
      jwtBody: true,
      handler: protocolStep(urls, (request, body, encrypted) =>
        d.deferredCredential(request, body, encrypted),
      ),
    }),
    ...(d.notifications
      ? [
          publicRoute({
            method: 'post',
            path: '/oid4vci/notification',
            operationId: 'oid4vci-notification',
            summary:
              'Notification endpoint: the wallet accepted, failed or deleted a credential (OpenID4VCI 1.0 §11)',
            more: { 204: { description: 'The notification was received' } },
            protocol: true,
            handler: protocolStep(urls, (request, body) => d.notification(request, body)),
          }),
        ]
      : []),
  ];
};

/** The formats OpenID4VCI offers (SD-JWT VC first, its default). */
const OID4VCI_PROOF_TYPES = formatsServing('oid4vci').map((f) => f.proofType) as [ProofType, ...ProofType[]];
/** The credential and deferred credential endpoints' 202 (OpenID4VCI 1.0 §8.3, §9.2). */
const DEFERRED = {
  202: {
    description:
      '`{ transaction_id, interval }`: the claims are not ready yet; poll the deferred credential endpoint (a JWE, `application/jwt`, when the wallet asked for encryption)',
    contentType: ['application/json', 'application/jwt'],
    schema: DeferredAnswerSchema,
  },
};

// docs/interface.md "OpenID4VCI: the wallet door": `userId` (the claims provider's) or `email`.
export const CredentialOfferBodySchema = z
  .object({
    schemaId: SchemaIdField,
    /** The format offered: SD_JWT_VC unless given (MSO_MDOC for a schema with an mdoc block). */
    proofType: z
      .enum(OID4VCI_PROOF_TYPES, { error: `must be one of ${OID4VCI_PROOF_TYPES.join(', ')}` })
      .optional(),
    userId: boundedText(MAX_ID_BYTES).optional(),
    email: RecipientEmailSchema.optional(),
    claims: CredentialSubjectSchema.optional(),
    txCode: z.boolean().default(false),
    grant: z.enum(['pre-authorized_code', 'authorization_code']).optional(),
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

const DeferredCredentialIdSchema = z.string().uuid();

// docs/interface.md "OpenID4VCI: the wallet door": the claims of a deferred credential.
export const DeferredClaimsBodySchema = z
  .object({ claims: CredentialSubjectSchema, reason: z.string().min(1).max(1000).optional() })
  .strict();

/**
 * `POST /admin/deferred-credentials/:credentialId/claims`: the claims a deferred OpenID4VCI
 * credential waits for (the id `credential.deferred` named); the wallet gets it at its next poll.
 */
export const deferredClaimsRoute: RouteFactory = (ctx) => {
  const d = channel(ctx);
  if (!d) return [];
  return {
    method: 'post',
    path: '/admin/deferred-credentials/:credentialId/claims',
    group: 'admin',
    auth: 'admin-api-key',
    doc: {
      operationId: 'admin-deferred-credential-claims',
      summary: 'Supply the claims of a deferred OpenID4VCI credential',
      tags: TAGS.admin,
      params: { credentialId: DeferredCredentialIdSchema },
      body: DeferredClaimsBodySchema,
      responses: {
        200: {
          description: '`{ credentialId, transactionExpiresAt }`: the wallet receives it at its next poll',
          contentType: 'application/json',
          schema: z.object({ credentialId: z.string(), transactionExpiresAt: Timestamp }),
        },
      },
      errors: ['NOT_FOUND', 'CLAIMS_INVALID'],
    },
    handler: async (req: Request, res: Response) => {
      const { credentialId } = parseInput(
        z.object({ credentialId: DeferredCredentialIdSchema }),
        req.params,
        'query',
      );
      const body = parseInput(DeferredClaimsBodySchema, req.body);
      const done = await d.supplyDeferredClaims({
        credentialId,
        claims: body.claims,
        audit: auditActor(res, body.reason),
      });
      noStore(res).json({
        credentialId: done.credentialId,
        transactionExpiresAt: done.transactionExpiresAt.toISOString(),
      });
    },
  };
};
