import express, { type RequestHandler } from 'express';
import { z } from 'zod';
import type { AppContext } from './context.js';
import type { ErrorCode } from './errors.js';
import { AuditQuerySchema, auditLog } from './http/admin/audit.js';
import { ClaimsImportBodySchema, importClaims } from './http/admin/claims.js';
import { HistoryQuerySchema, issuanceHistory } from './http/admin/history.js';
import {
  AdminIssueVcBodySchema,
  adminIssueVc,
  ValidateRowsBodySchema,
  validateIssueRows,
} from './http/admin/issue-vc.js';
import { listKeys, RotateKeyBodySchema, rotateKeys } from './http/admin/keys.js';
import { reloadSchemas, SchemasReloadBodySchema } from './http/admin/schemas.js';
import { RetryUploadsBodySchema, retryUploads } from './http/admin/uploads.js';
import { openCors, refuseBrowsers, requireAdminKey, requireKey } from './http/auth.js';
import { errorHandler, notFoundHandler } from './http/error-handler.js';
import { AvailableVcBodySchema, availableVc, IssueVcBodySchema, issueVc } from './http/holder-routes.js';
import { idempotent } from './http/idempotency.js';
import { credentialStatus } from './http/iden3-routes.js';
import { jsonBody } from './http/json-body.js';
import { NonceSchema } from './http/nonce.js';
import { requestObservability, requestScope } from './http/observability.js';
import { buildOpenApi, type DocGroup, type DocRow, type RouteDoc } from './http/openapi.js';
import { docsRoutes, healthz, metricsRoute, openApiRoute, readyz } from './http/ops-routes.js';
import { didDocument, jwtVcIssuer, partnerInfo, partnerJwks } from './http/public-routes.js';
import { rateLimiter } from './http/rate-limit.js';
import {
  changeStatus,
  publishStatusLists,
  revocationStatus,
  StatusChangeBodySchema,
  statusListPartition,
} from './http/status-routes.js';
import { typeMetadata } from './http/type-metadata.js';
import type { RouteGroup, StatusChange } from './model.js';

const json200 = (description: string) => ({ 200: { description, contentType: 'application/json' } });
const ParamPartition = z.string().regex(/^(0|[1-9]\d*)$/);
const holder = ['holder-facing'];
const admin = ['admin'];
const pub = ['public'];
const ops = ['operations'];

/**
 * The route table (spec 4.6). Each row: method, path, the group (auth + rate limit), handler, and
 * `doc`: the zod schemas the handler validates with and its answers, from which `/openapi.json`
 * is generated. The handler module is the code behind the rule.
 */
export function routeTable(ctx: AppContext) {
  const claimed = (scope: string, handler: RequestHandler) =>
    idempotent(ctx.store.idempotency, scope, handler, ctx.lifecycle);
  return [
    // Holder-facing, called by the hosting service (x-api-key).
    {
      method: 'post',
      path: '/available-vc',
      group: 'holder',
      handler: availableVc(ctx.issuance),
      doc: {
        operationId: 'available-vc',
        summary: 'Encrypted previews of the credentials a holder may ask for (spec 4.6)',
        tags: holder,
        body: AvailableVcBodySchema,
        responses: json200('`{ data: [...] }`: one envelope-encrypted preview per schema and proof type'),
        errors: ['NOT_FOUND', 'UPSTREAM_UNAVAILABLE'],
      },
    },
    {
      method: 'post',
      path: '/issue-vc',
      group: 'holder',
      handler: issueVc(ctx.issuance),
      doc: {
        operationId: 'issue-vc',
        summary: 'Issue a credential to the holder; answered once the envelope is stored (spec 4.6)',
        tags: holder,
        body: IssueVcBodySchema,
        responses: { 201: { description: 'Issued and stored by the hosting service (empty body)' } },
        errors: ['NOT_FOUND', 'CLAIMS_INVALID', 'UPSTREAM_UNAVAILABLE'],
      },
    },
    // Admin (x-admin-api-key; the issuer's own servers only).
    {
      method: 'post',
      path: '/admin/issue-vc',
      group: 'admin',
      handler: claimed('admin/issue-vc', adminIssueVc(ctx.direct, ctx.status)),
      doc: {
        operationId: 'admin-issue-vc',
        summary: 'Direct issuance by email (spec 4.6 admin issue-vc; Idempotency-Key honoured)',
        tags: admin,
        body: AdminIssueVcBodySchema,
        responses: {
          200: {
            description: 'onDuplicate=ignore found a valid credential',
            contentType: 'application/json',
          },
          201: { description: 'Issued and stored', contentType: 'application/json' },
          202: {
            description: 'Issued and recorded; the upload is retried in the background',
            contentType: 'application/json',
          },
        },
        errors: ['UNAUTHORIZED', 'NOT_FOUND', 'CONFLICT', 'CLAIMS_INVALID', 'UPSTREAM_UNAVAILABLE'],
      },
    },
    {
      method: 'post',
      path: '/admin/issue-vc/validate',
      group: 'admin',
      handler: validateIssueRows(ctx.direct),
      doc: {
        operationId: 'admin-issue-vc-validate',
        summary: 'Check issue-vc rows without issuing',
        tags: admin,
        body: ValidateRowsBodySchema,
        responses: json200('`{ problems, vct }`'),
        errors: ['NOT_FOUND'],
      },
    },
    {
      method: 'get',
      path: '/admin/issuance-history',
      group: 'admin',
      handler: issuanceHistory(ctx.store.history, ctx.status, ctx.hashEmail),
      doc: {
        operationId: 'admin-issuance-history',
        summary: 'Issued credentials, newest first, with their status',
        tags: admin,
        query: HistoryQuerySchema,
        responses: json200('A page of issuance records'),
      },
    },
    {
      method: 'post',
      path: '/admin/revoke',
      group: 'admin',
      handler: claimed('admin/revoke', changeStatus(ctx.status, 'revoke')),
      doc: statusChangeDoc('revoke'),
    },
    {
      method: 'post',
      path: '/admin/suspend',
      group: 'admin',
      handler: changeStatus(ctx.status, 'suspend'),
      doc: statusChangeDoc('suspend'),
    },
    {
      method: 'post',
      path: '/admin/unsuspend',
      group: 'admin',
      handler: changeStatus(ctx.status, 'unsuspend'),
      doc: statusChangeDoc('unsuspend'),
    },
    {
      method: 'post',
      path: '/admin/publish-token-status-list',
      group: 'admin',
      handler: publishStatusLists(ctx.status, ctx.store.audit),
      doc: {
        operationId: 'admin-publish-token-status-list',
        summary: 'Rebuild and re-sign every status list partition',
        tags: admin,
        responses: json200('`{ partitions: [{ partition, uri, size, iat }] }`'),
      },
    },
    {
      method: 'post',
      path: '/admin/claims',
      group: 'admin',
      handler: importClaims(ctx),
      doc: {
        operationId: 'admin-claims',
        summary: 'Import claims records into the sqlite claims provider',
        tags: admin,
        body: ClaimsImportBodySchema,
        responses: json200('`{ upserted }`'),
        errors: ['CLAIMS_INVALID'],
      },
    },
    {
      method: 'post',
      path: '/admin/schemas/reload',
      group: 'admin',
      handler: reloadSchemas(ctx),
      doc: {
        operationId: 'admin-schemas-reload',
        summary: 'Read SCHEMAS_DIR again; a set with a bad file is refused and the previous one kept',
        tags: admin,
        body: SchemasReloadBodySchema,
        responses: json200('`{ schemas: [{ schemaId, proofTypes, vct, file }] }`: the set now served'),
        errors: ['SCHEMAS_INVALID'],
      },
    },
    {
      method: 'get',
      path: '/admin/keys',
      group: 'admin',
      handler: listKeys(ctx),
      doc: {
        operationId: 'admin-keys',
        summary: 'Every key on disk and whether it is published',
        tags: admin,
        responses: json200('`{ keys: [...] }`'),
      },
    },
    {
      method: 'post',
      path: '/admin/keys/rotate',
      group: 'admin',
      handler: rotateKeys(ctx),
      doc: {
        operationId: 'admin-keys-rotate',
        summary: 'Rotate a signing or partner key',
        tags: admin,
        body: RotateKeyBodySchema,
        responses: json200('The new and retired keys'),
      },
    },
    {
      method: 'get',
      path: '/admin/audit',
      group: 'admin',
      handler: auditLog(ctx.store.audit),
      doc: {
        operationId: 'admin-audit',
        summary: 'The audit log of admin changes (issue 11)',
        tags: admin,
        query: AuditQuerySchema,
        responses: json200('A page of audit entries'),
      },
    },
    {
      method: 'post',
      path: '/admin/uploads/retry',
      group: 'admin',
      handler: retryUploads(ctx.outbox),
      doc: {
        operationId: 'admin-uploads-retry',
        summary: 'Queue failed uploads again (one credential, or every failed upload)',
        tags: admin,
        body: RetryUploadsBodySchema,
        responses: json200('`{ retried: [credentialId] }` (an id that is not a failed upload is left out)'),
      },
    },
    // Public (no key).
    {
      method: 'get',
      path: '/.well-known/did.json',
      group: 'public',
      handler: didDocument(ctx),
      doc: publicDoc('did-document', 'The did:web document of the issuer'),
    },
    {
      method: 'get',
      path: '/.well-known/jwt-vc-issuer',
      group: 'public',
      handler: jwtVcIssuer(ctx),
      doc: publicDoc('jwt-vc-issuer', 'SD-JWT VC issuer metadata with its JWKS'),
    },
    {
      method: 'get',
      path: '/.well-known/jwks.json',
      group: 'public',
      handler: partnerJwks(ctx),
      doc: publicDoc('partner-jwks', 'The partner JWT keys the hosting service verifies'),
    },
    {
      method: 'get',
      path: `/.well-known/${ctx.config.partnerInfoService}-partner-info`,
      group: 'public',
      handler: partnerInfo(ctx),
      doc: publicDoc('partner-info', '`{ partnerId }`'),
    },
    {
      method: 'get',
      path: '/revocation-status/:nonce',
      group: 'public',
      handler: revocationStatus(ctx.store.issuances),
      doc: {
        ...publicDoc('revocation-status', '`{ isRevoked, status }`'),
        params: { nonce: NonceSchema },
        errors: ['NOT_FOUND'],
      },
    },
    {
      method: 'get',
      path: '/statuslist/:partition',
      group: 'public',
      handler: statusListPartition(ctx.status),
      doc: {
        operationId: 'statuslist',
        summary: 'A token status list partition (draft-ietf-oauth-status-list)',
        tags: pub,
        params: { partition: ParamPartition },
        responses: {
          200: { description: 'The signed status list token', contentType: 'application/statuslist+jwt' },
          304: { description: 'Not modified (If-None-Match)' },
        },
        errors: ['NOT_FOUND'],
      },
    },
    // Issue 14: SD-JWT VC type metadata at each vct URL under ISSUER_ORIGIN.
    ...[...ctx.typeMetadata.values()].map(
      (served) =>
        ({
          method: 'get',
          path: served.path,
          group: 'public',
          // Mounted from the current schema set by createApp: a schema reload changes these paths.
          mountedByPath: true,
          handler: typeMetadata(served),
          doc: publicDoc(
            `type-metadata${served.path.replace(/[^A-Za-z0-9]+/g, '-')}`,
            'SD-JWT VC type metadata of this vct',
          ),
        }) as const,
    ),
    ...(ctx.iden3
      ? [
          {
            method: 'get',
            path: '/credential-status/:nonce',
            group: 'public',
            handler: credentialStatus(ctx.iden3),
            doc: {
              ...publicDoc('credential-status', 'Iden3 revocation status with its Merkle proofs'),
              params: { nonce: NonceSchema },
              errors: ['NOT_FOUND'] as ErrorCode[],
            },
          } as const,
        ]
      : []),
    // Operations (issue 10): probes, metrics and the contract itself; no key, no rate limit.
    {
      method: 'get',
      path: '/healthz',
      group: 'ops',
      handler: healthz(),
      doc: {
        operationId: 'healthz',
        summary: 'Liveness: `{"status":"ok"}` while the process can answer',
        tags: ops,
        responses: json200('`{ "status": "ok" }`'),
      },
    },
    {
      method: 'get',
      path: '/readyz',
      group: 'ops',
      handler: readyz(ctx),
      doc: {
        operationId: 'readyz',
        summary:
          'Readiness: database, keys, schemas, recovery; 503 naming the failing check or while draining',
        tags: ops,
        responses: {
          200: { description: '`{ status: "ready", checks }`', contentType: 'application/json' },
          503: { description: '`{ status: "not_ready", checks }`', contentType: 'application/json' },
        },
      },
    },
    {
      method: 'get',
      path: '/metrics',
      group: 'ops',
      security: 'metricsToken',
      listener: 'admin',
      handler: metricsRoute(ctx.metrics, ctx.secrets.metricsToken),
      doc: {
        operationId: 'metrics',
        summary: 'Prometheus metrics (Bearer METRICS_TOKEN when set)',
        tags: ops,
        responses: { 200: { description: 'Prometheus text format', contentType: 'text/plain' } },
      },
    },
    {
      method: 'get',
      path: '/openapi.json',
      group: 'ops',
      handler: openApiRoute(() => openApiDocument(ctx)),
      doc: {
        operationId: 'openapi',
        summary: 'This OpenAPI 3.1 document',
        tags: ops,
        responses: json200('OpenAPI 3.1'),
      },
    },
  ] as const satisfies ReadonlyArray<DocRow & { handler: RequestHandler }>;
}

function statusChangeDoc(change: StatusChange): RouteDoc {
  return {
    operationId: `admin-${change}`,
    summary: `${change[0]!.toUpperCase()}${change.slice(1)} a credential by revocation nonce${change === 'revoke' ? ' (Idempotency-Key honoured)' : ''}`,
    tags: admin,
    body: StatusChangeBodySchema,
    responses: json200('`{ revocationNonce, isRevoked, status, revokedAt, suspendedAt }`'),
    errors: ['NOT_FOUND', 'CONFLICT'],
  };
}

function publicDoc(operationId: string, description: string): RouteDoc {
  return { operationId, summary: description, tags: pub, responses: json200(description) };
}

/** The OpenAPI 3.1 document of this app's route table (`GET /openapi.json`, `npm run openapi`). */
export function openApiDocument(ctx: AppContext): ReturnType<typeof buildOpenApi> {
  return buildOpenApi(routeTable(ctx), { version: ctx.version, serverUrl: ctx.config.issuerOrigin });
}

/** A socket the app listens on: the main one, or the ADMIN_PORT one when set. */
export type Listener = 'public' | 'admin';

/**
 * Which listener serves each route group when ADMIN_PORT is set (issue 11): admin routes answer
 * only on the admin listener and 404 on the public one. A new group must choose here.
 */
export const LISTENER_OF = {
  holder: 'public',
  admin: 'admin',
  public: 'public',
  ops: 'public',
} as const satisfies Record<DocGroup, Listener>;

/** A row may choose its own listener (`/metrics` answers on the admin one when ADMIN_PORT is set). */
const listenerOf = (route: { group: DocGroup; listener?: Listener }): Listener =>
  route.listener ?? LISTENER_OF[route.group];

/** The app of one listener (`all`: no ADMIN_PORT, one listener serves every route). */
export function createApp(ctx: AppContext, serves: Listener | 'all' = 'all'): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', ctx.config.trustProxy);
  app.set('etag', false);
  app.use(requestObservability(ctx.log, ctx.metrics, ctx.lifecycle));

  const limits = ctx.config.rateLimits;
  const limited = (group: RouteGroup) =>
    rateLimiter(group, limits[group], ctx.rateLimitStore?.(group), () =>
      ctx.telemetry.emit('rateLimited', { group }),
    );
  const groups = {
    holder: [limited('holder'), requireKey('x-api-key', ctx.secrets.apiKey)],
    admin: [limited('admin'), refuseBrowsers, requireAdminKey(ctx.secrets.adminApiKeys)],
    public: [limited('public'), openCors],
    ops: [],
  } satisfies Record<DocGroup, RequestHandler[]>;
  // One limiter instance per group, shared by the group's routes.
  const json = jsonBody();

  // Preflight for the public routes only; admin and holder routes send no CORS headers.
  app.options(
    /^\/(\.well-known|statuslist|revocation-status|credential-status)(\/.*)?$/,
    openCors,
    (_req, res) => {
      res.status(204).end();
    },
  );
  // Each request runs on the schema set current when it reaches its handler, whatever reloads
  // happen before it ends.
  const pinSchemas: RequestHandler = (_req, _res, next) => ctx.schemaCatalog.pin(next);
  for (const route of routeTable(ctx)) {
    if (serves !== 'all' && listenerOf(route) !== serves) continue;
    if ('mountedByPath' in route) continue;
    const chain: RequestHandler[] = [...groups[route.group]];
    if (route.method === 'post') chain.push(json);
    app[route.method](route.path, ...chain, requestScope, pinSchemas, route.handler);
  }
  // SD-JWT VC type metadata at the current schema set's vct paths: one router per set, built when
  // a request first meets that set (a path no schema has passes on; a kit route above wins).
  if (listenerOf({ group: 'public' }) === serves || serves === 'all') {
    const routers = new WeakMap<object, express.Router>();
    app.use((req, res, next) => {
      const served = ctx.schemaCatalog.current().typeMetadata;
      let router = routers.get(served);
      if (!router) {
        router = express.Router();
        for (const s of served.values())
          router.get(s.path, ...groups.public, requestScope, pinSchemas, typeMetadata(s));
        routers.set(served, router);
      }
      router(req, res, next);
    });
  }
  if (serves !== 'admin') app.use(docsRoutes());

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.log));
  return app;
}
