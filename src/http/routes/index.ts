import type { AppContext } from '../../context.js';
import { auditRoute } from './admin/audit.js';
import { claimsRoute } from './admin/claims.js';
import { endConsoleSessionRoute, listConsoleSessionsRoute } from './admin/console-sessions.js';
import { historyRoute } from './admin/history.js';
import { adminIssueVcRoute, validateRowsRoute } from './admin/issue-vc.js';
import { compromisedKeyRoute, listKeysRoute, rotateKeysRoute } from './admin/keys.js';
import { renewRoute } from './admin/renew.js';
import { reloadSchemasRoute } from './admin/schemas.js';
import { statusChangeJobRoute, statusChangesRoute } from './admin/status-changes.js';
import { retryUploadsRoute } from './admin/uploads.js';
import {
  addWebhookRoute,
  listWebhooksRoute,
  removeWebhookRoute,
  retryFailedWebhookDeliveriesRoute,
  retryWebhookDeliveryRoute,
  rotateWebhookSecretRoute,
  webhookDeliveriesRoute,
} from './admin/webhooks.js';
import { availableVcRoute, issueVcRoute } from './holder/holder.js';
import { credentialStatusRoute } from './iden3/credential-status.js';
import { oid4vciAuthorizationCodeRoutes } from './oid4vci/authorization-code.js';
import {
  credentialOffersRoute,
  deferredClaimsRoute,
  oid4vciMetadataRoutes,
  oid4vciWalletRoutes,
} from './oid4vci/oid4vci.js';
import { landingRoute } from './ops/landing.js';
import { metricsRoute } from './ops/metrics.js';
import { buildOpenApi, openApiRoute } from './ops/openapi.js';
import { healthzRoute, readyzRoute } from './ops/probes.js';
import { formatDocumentRoutes } from './public/format-documents.js';
import { didDocumentRoute, jwtVcIssuerRoute, partnerInfoRoute, partnerJwksRoute } from './public/public.js';
import { typeMetadataRoutes } from './public/type-metadata.js';
import type { Route, RouteFactory } from './route.js';
import {
  publishStatusListsRoute,
  revocationStatusRoute,
  statusChangeRoutes,
  statusListRoute,
} from './status/status.js';

/**
 * The route table: every endpoint of the app, each exported by the module that holds its method,
 * path, group, auth, OpenAPI description and handler. `app.ts` mounts them in this order and
 * `GET /openapi.json` describes exactly these. To add a route, write its module and list it here.
 * Beside the table, `app.ts` mounts the `/docs` page (`ops/docs.ts`) and the admin console
 * (`console/console.ts`, CONSOLE=on), whose `api/admin/…` paths run these admin handlers.
 */
export const ROUTES: readonly RouteFactory[] = [
  // Holder-facing, called by the hosting service (x-api-key).
  availableVcRoute,
  issueVcRoute,
  // Admin (x-admin-api-key; the issuer's own servers only).
  adminIssueVcRoute,
  validateRowsRoute,
  historyRoute,
  statusChangeRoutes,
  statusChangesRoute,
  statusChangeJobRoute,
  publishStatusListsRoute,
  claimsRoute,
  reloadSchemasRoute,
  listKeysRoute,
  rotateKeysRoute,
  compromisedKeyRoute,
  renewRoute,
  auditRoute,
  retryUploadsRoute,
  addWebhookRoute,
  listWebhooksRoute,
  removeWebhookRoute,
  rotateWebhookSecretRoute,
  webhookDeliveriesRoute,
  retryWebhookDeliveryRoute,
  retryFailedWebhookDeliveriesRoute,
  listConsoleSessionsRoute,
  endConsoleSessionRoute,
  credentialOffersRoute,
  deferredClaimsRoute,
  // Public (no key, open CORS): read by wallets and verifiers.
  didDocumentRoute,
  jwtVcIssuerRoute,
  partnerJwksRoute,
  partnerInfoRoute,
  revocationStatusRoute,
  statusListRoute,
  typeMetadataRoutes,
  credentialStatusRoute,
  formatDocumentRoutes,
  // The OpenID4VCI channel (OID4VCI=on): read and called by standards wallets.
  oid4vciMetadataRoutes,
  oid4vciWalletRoutes,
  oid4vciAuthorizationCodeRoutes,
  // Operations: probes, metrics, the contract itself and the landing page; no rate limit.
  healthzRoute,
  readyzRoute,
  metricsRoute,
  openApiRoute,
  landingRoute,
];

/** The routes of this app, in mounting order. */
export function routeTable(ctx: AppContext): Route[] {
  const routes: Route[] = [];
  const all = () => routes;
  for (const factory of ROUTES) routes.push(...[factory(ctx, all)].flat());
  return routes;
}

/** The OpenAPI 3.1 document of this app's route table (`GET /openapi.json`, `npm run openapi`). */
export function openApiDocument(ctx: AppContext): ReturnType<typeof buildOpenApi> {
  return buildOpenApi(routeTable(ctx), { version: ctx.version, serverUrl: ctx.identity.origin });
}
