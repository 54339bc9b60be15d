import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { OAuthErrorBodySchema } from '../responses.js';
import { type Route, type RouteFactory, TAGS } from '../route.js';
import { publicRoute } from './answers.js';
import { noStore, protocolStep, requestLike } from './oid4vci.js';

/**
 * The authorization code flow's endpoints (docs/interface.md "OpenID4VCI: the wallet door"): only
 * with a login provider (OID4VCI_LOGIN_ISSUER). The pushed authorization request answers JSON;
 * the authorization endpoint and the login provider's way back answer with a redirect of the
 * holder's browser (303), or, when the request cannot be trusted, an OAuth error body.
 */

const PushedAnswerSchema = z.looseObject({ request_uri: z.string(), expires_in: z.number().int() });

/** The query as the flow reads it: a parameter given twice stays an array (and is refused). */
const query = (req: Request): Record<string, unknown> => ({ ...(req.query as Record<string, unknown>) });

/** 303 See Other with no body: the browser follows `Location`. */
const redirect = (res: Response, location: string) => {
  noStore(res).status(303).location(location).end();
};

const browserStep = (
  path: string,
  operationId: string,
  summary: string,
  handler: Route['handler'],
): Route => ({
  method: 'get',
  path,
  group: 'public',
  auth: 'none',
  doc: {
    operationId,
    summary,
    tags: TAGS.public,
    responses: {
      303: { description: 'The holder’s browser sent on (`Location`)' },
      400: {
        description: 'OAuth 2.0 error (RFC 6749 §4.1.2.1): a request that cannot be trusted',
        contentType: 'application/json',
        schema: OAuthErrorBodySchema,
      },
    },
  },
  handler,
});

export const oid4vciAuthorizationCodeRoutes: RouteFactory = (ctx: AppContext) => {
  const d = ctx.oid4vci;
  if (!d?.authorizationCode) return [];
  const { urls } = ctx.identity;
  const par = publicRoute({
    method: 'post',
    path: '/oid4vci/par',
    form: true,
    operationId: 'oid4vci-par',
    summary: 'Pushed authorization request (RFC 9126): the request kept, a request_uri answered (201)',
    answer: PushedAnswerSchema,
    protocol: true,
    handler: protocolStep(urls, (request, body) => d.pushAuthorization(request, body)),
  });
  // RFC 9126 §2.2: a pushed request is answered 201 Created.
  const { 200: created, ...refusals } = par.doc.responses;
  par.doc.responses = { 201: created!, ...refusals };
  return [
    par,
    browserStep(
      '/oid4vci/authorize',
      'oid4vci-authorize',
      'Authorization endpoint (RFC 6749 §4.1.1): the holder is sent to sign in at the login provider',
      async (req, res) => redirect(res, await d.authorize(requestLike(urls, req), query(req))),
    ),
    browserStep(
      '/oid4vci/login/callback',
      'oid4vci-login-callback',
      "The login provider's way back: the holder is sent to the wallet with a code or an error (RFC 9207 iss)",
      async (req, res) => redirect(res, await d.loginCallback(query(req))),
    ),
  ];
};
