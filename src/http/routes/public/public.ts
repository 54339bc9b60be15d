import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { compromisedKids, publishedSigningKeys } from '../../../keys/published-keys.js';
import { PublicJwkSchema } from '../responses.js';
import { publicDoc, type RouteFactory } from '../route.js';

/** The did:web document (W3C DID Core §5): one JsonWebKey2020 method per published signing key. */
export const DidDocumentSchema = z.object({
  '@context': z.array(z.string()),
  id: z.string(),
  verificationMethod: z.array(
    z.object({
      id: z.string(),
      type: z.literal('JsonWebKey2020'),
      controller: z.string(),
      publicKeyJwk: PublicJwkSchema,
    }),
  ),
  assertionMethod: z.array(z.string()),
  service: z.array(z.object({ id: z.string(), type: z.string(), serviceEndpoint: z.string() })),
  /** The Iden3 issuer DID, while that back-end is on. */
  alsoKnownAs: z.array(z.string()).optional(),
});

/** SD-JWT VC issuer metadata (draft-ietf-oauth-sd-jwt-vc §5). */
export const JwtVcIssuerSchema = z.object({
  issuer: z.string(),
  jwks: z.object({ keys: z.array(PublicJwkSchema) }),
});

export const JwksSchema = z.object({ keys: z.array(PublicJwkSchema) });

export const PartnerInfoSchema = z.object({ partnerId: z.string() });

/** `GET /.well-known/did.json`. */
export const didDocumentRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/.well-known/did.json',
  group: 'public',
  auth: 'none',
  doc: publicDoc(
    'did-document',
    'The did:web document of the issuer',
    DidDocumentSchema,
    'application/did+json',
  ),
  handler: didDocument(ctx),
});

/** `GET /.well-known/jwt-vc-issuer`. */
export const jwtVcIssuerRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/.well-known/jwt-vc-issuer',
  group: 'public',
  auth: 'none',
  doc: publicDoc('jwt-vc-issuer', 'SD-JWT VC issuer metadata with its JWKS', JwtVcIssuerSchema),
  handler: jwtVcIssuer(ctx),
});

/** `GET /.well-known/jwks.json`. */
export const partnerJwksRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/.well-known/jwks.json',
  group: 'public',
  auth: 'none',
  doc: publicDoc('partner-jwks', 'The partner JWT keys the hosting service verifies', JwksSchema),
  handler: partnerJwks(ctx),
});

/** `GET /.well-known/<PARTNER_INFO_SERVICE>-partner-info`. */
export const partnerInfoRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: `/.well-known/${ctx.identity.partner.infoService}-partner-info`,
  group: 'public',
  auth: 'none',
  doc: publicDoc('partner-info', '`{ partnerId }`', PartnerInfoSchema),
  handler: partnerInfo(ctx),
});

/** The did:web document (W3C DID Core §5; did:web method specification). */
export function didDocument(ctx: AppContext) {
  return async (_req: Request, res: Response) => {
    const { urls, partner } = ctx.identity;
    const did = urls.did;
    const keys = await publishedSigningKeys(
      ctx.identity.keys.current(),
      ctx.store.issuances,
      new Date(),
      await compromisedKids(ctx.store.compromisedKeys),
    );
    const doc: Record<string, unknown> = {
      '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/suites/jws-2020/v1'],
      id: did,
      verificationMethod: keys.map((jwk) => ({
        id: `${did}#${jwk.kid}`,
        type: 'JsonWebKey2020',
        controller: did,
        publicKeyJwk: publicOnly(jwk),
      })),
      assertionMethod: keys.map((jwk) => `${did}#${jwk.kid}`),
      service: [
        {
          id: `${did}#partner-info`,
          type: 'PartnerInfo',
          serviceEndpoint: urls.partnerInfo(partner.infoService),
        },
      ],
    };
    // The identifiers a started format gives this issuer (the Iden3 DID).
    const alsoKnownAs = ctx.formats.alsoKnownAs();
    if (alsoKnownAs.length > 0) doc.alsoKnownAs = alsoKnownAs;
    res.type('application/did+json').json(doc);
  };
}

/** SD-JWT VC issuer metadata (draft-ietf-oauth-sd-jwt-vc §5): `{ issuer, jwks }`. */
export function jwtVcIssuer(ctx: AppContext) {
  return async (_req: Request, res: Response) => {
    const keys = await publishedSigningKeys(
      ctx.identity.keys.current(),
      ctx.store.issuances,
      new Date(),
      await compromisedKids(ctx.store.compromisedKeys),
    );
    res.json({ issuer: ctx.identity.origin, jwks: { keys: keys.map(publicOnly) } });
  };
}

/** The partner JWT public keys the hosting service checks `kid` against (docs/interface.md). */
export function partnerJwks(ctx: AppContext) {
  return (_req: Request, res: Response) => {
    res.json({ keys: ctx.identity.keys.current().partnerKeys.map((k) => publicOnly(k.publicJwk)) });
  };
}

export function partnerInfo(ctx: AppContext) {
  return (_req: Request, res: Response) => {
    res.json({ partnerId: ctx.identity.partner.id });
  };
}

function publicOnly(jwk: import('jose').JWK): import('jose').JWK {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = jwk;
  return pub;
}
