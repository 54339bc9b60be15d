import express, { type RequestHandler } from 'express';
import type { Config } from './config/config.js';
import type { AppContext } from './context.js';
import {
  openCors,
  refuseBrowsers,
  requireAdminKey,
  requireBearer,
  requireKey,
} from './http/middleware/auth.js';
import { chain } from './http/middleware/chain.js';
import { errorHandler, notFound } from './http/middleware/error-handler.js';
import { idempotent } from './http/middleware/idempotency.js';
import { jsonBody } from './http/middleware/json-body.js';
import { requestObservability, requestScope } from './http/middleware/observability.js';
import { rateLimiter } from './http/middleware/rate-limit.js';
import { responseContract } from './http/middleware/response-contract.js';
import { consoleRouter, type DoctorItem } from './http/routes/console/console.js';
import { routeTable } from './http/routes/index.js';
import { oid4vciOffReason } from './http/routes/oid4vci/oid4vci.js';
import { docsRoutes } from './http/routes/ops/docs.js';
import { currentTypeMetadata } from './http/routes/public/type-metadata.js';
import type { Group, Listener, Route, RouteAuth } from './http/routes/route.js';
import type { RouteGroup } from './model.js';

/**
 * Which listener serves each route group when ADMIN_PORT is set: admin routes answer only on the
 * admin listener and 404 on the public one. A new group must choose here.
 */
export const LISTENER_OF = {
  holder: 'public',
  admin: 'admin',
  public: 'public',
  ops: 'public',
} as const satisfies Record<Group, Listener>;

/** A route may choose its own listener (`/metrics` answers on the admin one when ADMIN_PORT is set). */
const listenerOf = (route: Route): Listener => route.listener ?? LISTENER_OF[route.group];

/** What Express reads through `req.app` and `res.app` while it serves a request. */
function withSettings(app: express.Express, trustProxy: Config['trustProxy']): express.Express {
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxy);
  app.set('etag', false);
  return app;
}

const prototypes = new Map<string, Pick<express.Express, 'request' | 'response'>>();

/**
 * The `request` and `response` prototypes every app of this process with these settings serves
 * with (docs/architecture.md "One shape for every tenant's requests"). Express gives each app a
 * pair of its own and puts them under every request it handles: a process with an app per tenant
 * would see its requests and responses in a shape per tenant, and each property read on them, in
 * Express and here, would miss V8's inline caches. The pair belongs to an app with no routes and
 * the same settings, so what `req.app` and `res.app` answer (trust proxy, etag, JSON settings) is
 * what each app's own would.
 */
function sharedPrototypes(trustProxy: Config['trustProxy']): Pick<express.Express, 'request' | 'response'> {
  const key = JSON.stringify(trustProxy);
  let pair = prototypes.get(key);
  if (!pair) {
    const settings = withSettings(express(), trustProxy);
    pair = { request: settings.request, response: settings.response };
    prototypes.set(key, pair);
  }
  return pair;
}

/**
 * The app of one listener (`all`: no ADMIN_PORT, one listener serves every route). Each request
 * goes: observability, then its route's chain (group rate limit and CORS, auth, JSON body,
 * request scope, handler), then the error handler, last.
 */
export function createApp(
  ctx: AppContext,
  serves: Listener | 'all' = 'all',
  extras: { doctor?: (() => Promise<DoctorItem[]>) | undefined } = {},
): express.Express {
  const app = withSettings(express(), ctx.config.trustProxy);
  // Paths match exactly: `/ADMIN/KEYS` or `/metrics/` is not `/admin/keys` or `/metrics`, so a
  // proxy rule that blocks a path case-sensitively cannot be walked around (docs/security.md
  // "What the server exposes").
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  const shared = sharedPrototypes(ctx.config.trustProxy);
  app.request = shared.request;
  app.response = shared.response;
  app.use(requestObservability(ctx.log, ctx.metrics, ctx.lifecycle));

  // One limiter instance per group, shared by the group's routes.
  const limits = ctx.config.rateLimits;
  const limited = (group: RouteGroup) =>
    rateLimiter(group, limits[group], ctx.rateLimitStore?.(group), () =>
      ctx.telemetry.emit('rateLimited', { group }),
    );
  const groups = {
    holder: [limited('holder')],
    admin: [limited('admin')],
    public: [limited('public'), openCors],
    ops: [],
  } satisfies Record<Group, RequestHandler[]>;
  const auth = {
    'api-key': [requireKey('x-api-key', ctx.secrets.apiKey, ctx.secrets.keysHashed)],
    'admin-api-key': [refuseBrowsers, requireAdminKey(ctx.secrets.adminApiKeys, ctx.secrets.keysHashed)],
    'metrics-token': [requireBearer(ctx.secrets.metricsToken, 'metrics')],
    none: [],
  } satisfies Record<RouteAuth, RequestHandler[]>;
  const json = jsonBody();
  // RFC 6749 §4.1.3: a token request is a form; plain keys only (no nested `a[b]` syntax).
  const form = express.urlencoded({ extended: false, limit: '100kb', parameterLimit: 50 });
  // OpenID4VCI 1.0 §10: an encrypted credential request is a compact JWE, `application/jwt`.
  const jwtText = express.text({ type: 'application/jwt', limit: '100kb' });

  // Preflight for the public routes only; admin and holder routes send no CORS headers.
  app.options(
    /^\/(\.well-known|statuslist|revocation-status|credential-status|oid4vci)(\/.*)?$/,
    openCors,
    (_req, res) => {
      res.status(204).end();
    },
  );
  // Each request runs on the schema set current when it reaches its handler, whatever reloads
  // happen before it ends.
  const pinSchemas: RequestHandler = (_req, _res, next) => ctx.schemaCatalog.pin(next);
  // docs/schemas-and-claims.md "Reloading schemas": with SCHEMAS_WATCH, an admin request (a claims
  // import, an issuance) right after a schema file is written is served with it, whatever the
  // watch's poll; nothing to do while unwatched.
  const catchUpSchemas: RequestHandler = (_req, _res, next) => {
    ctx.schemaCatalog.catchUp().then(() => next(), next);
  };
  const table = routeTable(ctx);
  for (const route of table) {
    if (serves !== 'all' && listenerOf(route) !== serves) continue;
    if (route.mountedByPath) continue;
    // The test suite's check of each answer against the route's description (no-op otherwise).
    const check = responseContract(route);
    const before: RequestHandler[] = [...(check ? [check] : []), ...groups[route.group], ...auth[route.auth]];
    if (route.jwtBody) before.push(jwtText);
    if (route.method === 'post')
      before.push(route.form ? form : route.jsonLimit ? jsonBody(undefined, route.jsonLimit) : json);
    if (route.group === 'admin') before.push(catchUpSchemas);
    const handler = route.idempotency
      ? idempotent(ctx.store.idempotency, route.idempotency, route.handler, ctx.lifecycle)
      : route.handler;
    app[route.method](route.path, chain([...before, requestScope, pinSchemas, handler]));
  }
  if (serves === 'all' || serves === LISTENER_OF.public) {
    // Every type metadata path shares one description: the first row's stands for all.
    const metadataRow = table.find((route) => route.mountedByPath);
    const check = metadataRow && responseContract(metadataRow);
    app.use(
      currentTypeMetadata(ctx.schemaCatalog, [
        ...(check ? [check] : []),
        ...groups.public,
        requestScope,
        pinSchemas,
      ]),
    );
  }
  if (serves !== 'admin') app.use(docsRoutes());
  // The admin console (CONSOLE=on) answers where the admin routes do.
  if (serves !== 'public' && ctx.config.console.enabled)
    app.use(
      '/console',
      consoleRouter(ctx, {
        routes: table,
        adminLimit: groups.admin[0]!,
        scope: [requestScope, pinSchemas],
        doctor: extras.doctor,
      }),
    );

  app.use(notFound(ctx.config.oid4vci.enabled ? undefined : oid4vciOffReason));
  app.use(errorHandler(ctx.log));
  return app;
}
