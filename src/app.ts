import express, { type RequestHandler } from 'express';
import type { AppContext } from './context.js';
import {
  adminIssueVc,
  importClaims,
  issuanceHistory,
  listKeys,
  rotateKeys,
  validateIssueRows,
} from './http/admin-routes.js';
import { openCors, refuseBrowsers, requireKey } from './http/auth.js';
import { errorHandler, notFoundHandler } from './http/error-handler.js';
import { availableVc, issueVc } from './http/holder-routes.js';
import { idempotent } from './http/idempotency.js';
import { credentialStatus } from './http/iden3-routes.js';
import { didDocument, jwtVcIssuer, partnerInfo, partnerJwks } from './http/public-routes.js';
import { rateLimiter } from './http/rate-limit.js';
import {
  changeStatus,
  publishStatusLists,
  revocationStatus,
  statusListPartition,
} from './http/status-routes.js';

/**
 * The route table (spec 4.6). Each row: method, path, the group (auth + rate limit), handler.
 * The handler module is the code behind the rule.
 */
export function routeTable(ctx: AppContext) {
  return [
    // Holder-facing, called by the hosting service (x-api-key).
    { method: 'post', path: '/available-vc', group: 'holder', handler: availableVc(ctx.issuance) },
    { method: 'post', path: '/issue-vc', group: 'holder', handler: issueVc(ctx.issuance) },
    // Admin (x-admin-api-key; the issuer's own servers only).
    {
      method: 'post',
      path: '/admin/issue-vc',
      group: 'admin',
      handler: idempotent(ctx.store.idempotency, 'admin/issue-vc', adminIssueVc(ctx.direct, ctx.status)),
    },
    {
      method: 'post',
      path: '/admin/issue-vc/validate',
      group: 'admin',
      handler: validateIssueRows(ctx.direct),
    },
    {
      method: 'get',
      path: '/admin/issuance-history',
      group: 'admin',
      handler: issuanceHistory(ctx.store.history, ctx.status),
    },
    {
      method: 'post',
      path: '/admin/revoke',
      group: 'admin',
      handler: idempotent(ctx.store.idempotency, 'admin/revoke', changeStatus(ctx.status, 'revoke')),
    },
    { method: 'post', path: '/admin/suspend', group: 'admin', handler: changeStatus(ctx.status, 'suspend') },
    {
      method: 'post',
      path: '/admin/unsuspend',
      group: 'admin',
      handler: changeStatus(ctx.status, 'unsuspend'),
    },
    {
      method: 'post',
      path: '/admin/publish-token-status-list',
      group: 'admin',
      handler: publishStatusLists(ctx.status),
    },
    { method: 'post', path: '/admin/claims', group: 'admin', handler: importClaims(ctx) },
    { method: 'get', path: '/admin/keys', group: 'admin', handler: listKeys(ctx) },
    { method: 'post', path: '/admin/keys/rotate', group: 'admin', handler: rotateKeys(ctx) },
    // Public (no key).
    { method: 'get', path: '/.well-known/did.json', group: 'public', handler: didDocument(ctx) },
    { method: 'get', path: '/.well-known/jwt-vc-issuer', group: 'public', handler: jwtVcIssuer(ctx) },
    { method: 'get', path: '/.well-known/jwks.json', group: 'public', handler: partnerJwks(ctx) },
    {
      method: 'get',
      path: `/.well-known/${ctx.config.partnerInfoService}-partner-info`,
      group: 'public',
      handler: partnerInfo(ctx),
    },
    {
      method: 'get',
      path: '/revocation-status/:nonce',
      group: 'public',
      handler: revocationStatus(ctx.store.issuances),
    },
    {
      method: 'get',
      path: '/statuslist/:partition',
      group: 'public',
      handler: statusListPartition(ctx.status),
    },
    ...(ctx.iden3
      ? ([
          {
            method: 'get',
            path: '/credential-status/:nonce',
            group: 'public',
            handler: credentialStatus(ctx.iden3),
          },
        ] as const)
      : []),
  ] as const satisfies ReadonlyArray<{
    method: 'get' | 'post';
    path: string;
    group: 'holder' | 'admin' | 'public';
    handler: RequestHandler;
  }>;
}

export function createApp(ctx: AppContext): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', ctx.config.trustProxy);
  app.set('etag', false);

  if (ctx.emulator) app.use('/emulator/v1', ctx.emulator.router);

  const limits = ctx.config.rateLimits;
  const groups = {
    holder: [
      rateLimiter('holder', limits.holder, ctx.rateLimitStore?.('holder')),
      requireKey('x-api-key', ctx.secrets.apiKey),
    ],
    admin: [
      rateLimiter('admin', limits.admin, ctx.rateLimitStore?.('admin')),
      refuseBrowsers,
      requireKey('x-admin-api-key', ctx.secrets.adminApiKey),
    ],
    public: [rateLimiter('public', limits.public, ctx.rateLimitStore?.('public')), openCors],
  } satisfies Record<string, RequestHandler[]>;
  // One limiter instance per group, shared by the group's routes.
  const json = express.json({ limit: '100kb', strict: true });

  // Preflight for the public routes only; admin and holder routes send no CORS headers.
  app.options(
    /^\/(\.well-known|statuslist|revocation-status|credential-status)(\/.*)?$/,
    openCors,
    (_req, res) => {
      res.status(204).end();
    },
  );
  for (const route of routeTable(ctx)) {
    const chain: RequestHandler[] = [...groups[route.group]];
    if (route.method === 'post') chain.push(json);
    app[route.method](route.path, ...chain, route.handler);
  }

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.log));
  return app;
}
