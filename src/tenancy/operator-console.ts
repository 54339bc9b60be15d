import express, { type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { adminKeyMatcher } from '../http/middleware/auth.js';
import { rateLimiter } from '../http/middleware/rate-limit.js';
import { parseInput } from '../http/middleware/validate.js';
import {
  consoleAsset,
  nextOf,
  SIGN_IN_FAILURES_PER_MIN,
  signInHandler,
  signInPage,
} from '../http/routes/console/console.js';
import { html, when } from '../http/routes/console/html.js';
import { page, securityHeaders } from '../http/routes/console/layout.js';
import {
  CONSOLE_PATH,
  endSession,
  requireCsrf,
  requireSession,
  type SessionContext,
  sameOrigin,
} from '../http/routes/console/session.js';
import type { Deployment, ServedTenant } from './deployment.js';
import { healthOf } from './operator-view.js';
import { operatorView, TenantIdSchema } from './tenant.js';

const TenantParams = z.object({ id: TenantIdSchema });

/** Tenants per page of the list: each row reads its tenant's counts. */
const PAGE_TENANTS = 50;

const OPERATOR_SIGN_IN = {
  label: 'Operator key',
  hint: html`The deployment's <code>OPERATOR_API_KEY</code>; it signs in as <code>operator</code>. A tenant's admin keys sign in on that tenant's own host. The key is checked once; the browser keeps only a session cookie.`,
};

const wrap =
  (fn: (req: Request, res: Response) => Promise<void>): RequestHandler =>
  (req, res, next) => {
    fn(req, res).catch(next);
  };

/**
 * `/console` on a host that is no tenant's (docs/several-issuers.md "The operator's console"): the
 * console's sign-in, session, CSRF and page machinery with OPERATOR_API_KEY as its one key and its
 * sessions in the registry. One page, the tenants with their state, health, volume and failing
 * uploads, and their disable and enable actions; never a claim or a credential.
 */
export function operatorConsoleRouter(deployment: Deployment, operatorKey: string): express.Router {
  const { config, log } = deployment.options;
  const ctx: SessionContext = {
    config,
    log,
    store: { consoleSessions: deployment.namespaces.registry.consoleSessions },
    // The session's actor and key: a changed OPERATOR_API_KEY ends the sessions the old one opened.
    secrets: { adminApiKeys: [{ name: 'operator', key: operatorKey }] },
  };
  const router = express.Router({ caseSensitive: true, strict: true });
  const session = requireSession(ctx, 'page');
  const apiSession = requireSession(ctx, 'api');
  const origin = sameOrigin(ctx);
  const csrf = requireCsrf(ctx);
  const form = express.urlencoded({ extended: false, limit: '8kb' });
  const json = express.json({ limit: '4kb', type: 'application/json' });
  const matchKey = adminKeyMatcher(ctx.secrets.adminApiKeys);
  // docs/operations.md "The admin console": failed sign-ins counted per address and minute.
  const failedSignIns = rateLimiter('admin', SIGN_IN_FAILURES_PER_MIN, undefined, undefined, {
    counter: 'operator-console-sign-in',
    message: 'console: too many failed sign-ins from this address; wait a minute',
  });
  const limit = rateLimiter('admin', config.rateLimits.admin);

  router.use((_req, res, next) => {
    securityHeaders(res);
    next();
  });
  router.get('/assets/:name', consoleAsset);
  router.get('/sign-in', (req, res) => signInPage(res, nextOf(req), undefined, 200, OPERATOR_SIGN_IN));
  router.post(
    '/sign-in',
    origin,
    form,
    signInHandler(ctx, {
      matchKey,
      failedSignIns,
      console: 'operator console',
      logFields: { console: 'operator' },
      missingKey: 'required: the operator key, as a form field',
      wrongKey: 'That key is not the operator key.',
      as: OPERATOR_SIGN_IN,
    }),
  );
  router.post('/sign-out', origin, session, form, csrf, (req, res, next) => {
    endSession(ctx, req, res)
      .then(() => res.redirect(303, `${CONSOLE_PATH}/sign-in`))
      .catch(next);
  });
  router.get(
    '/',
    session,
    wrap((req, res) => tenantsPage(deployment, req, res)),
  );
  for (const [action, enabled] of [
    ['disable', false],
    ['enable', true],
  ] as const)
    router.post(
      `/api/tenants/:id/${action}`,
      limit,
      origin,
      apiSession,
      json,
      csrf,
      wrap(async (req, res) => {
        const { id } = parseInput(TenantParams, req.params, 'query');
        const actor = (res.locals.console as { actor: string }).actor;
        const record = await deployment.setEnabled(id, enabled, actor);
        res.json({ tenant: operatorView(record) });
      }),
    );
  return router;
}

async function tenantsPage(deployment: Deployment, req: Request, res: Response): Promise<void> {
  const all = deployment.served().sort((a, b) => a.record.id.localeCompare(b.record.id));
  const pageNo = Math.max(1, Number.parseInt(String(req.query.page ?? '1'), 10) || 1);
  const shown = all.slice((pageNo - 1) * PAGE_TENANTS, pageNo * PAGE_TENANTS);
  const rows = await Promise.all(shown.map(async (t) => ({ t, health: await healthOf(t) })));
  const failing = all.filter((t) => t.problem !== undefined).length;
  const disabled = all.filter((t) => !t.record.enabled).length;
  page(res, {
    title: 'Tenants',
    current: 'overview',
    pages: [],
    body: html`<dl class="figures"><div><dt>Tenants</dt><dd>${all.length}</dd></div><div><dt>Disabled</dt><dd>${disabled}</dd></div><div><dt>Failing to start</dt><dd>${failing}</dd></div></dl>
<table><caption>Tenants ${shown.length === 0 ? '' : `${(pageNo - 1) * PAGE_TENANTS + 1} to ${(pageNo - 1) * PAGE_TENANTS + shown.length}`} of ${all.length}, by id</caption><thead><tr><th scope="col">Tenant</th><th scope="col">Origin</th><th scope="col">State</th><th scope="col">Issued (24 h)</th><th scope="col">Uploads pending</th><th scope="col">Oldest pending</th><th scope="col">Uploads failed</th><th scope="col">Webhook deliveries failed</th><th scope="col">Action</th></tr></thead><tbody>${rows.map(
      ({ t, health }) =>
        html`<tr data-tenant="${t.record.id}"><th scope="row">${t.record.id}</th><td><code>${t.record.origin}</code></td><td>${stateOf(t)}</td>${
          health.serving
            ? html`<td>${health.issuedLast24h}</td><td>${health.uploads.pending}</td><td>${when(health.uploads.oldestPending)}</td><td>${health.uploads.failed}</td><td>${health.failedWebhookDeliveries}</td>`
            : html`<td colspan="5">not served</td>`
        }<td>${actionOf(t)}</td></tr>`,
    )}</tbody></table>
<p class="pager">${pageNo > 1 ? html`<a rel="prev" href="${CONSOLE_PATH}?page=${pageNo - 1}">Previous page</a> ` : ''}${
      pageNo * PAGE_TENANTS < all.length
        ? html`<a rel="next" href="${CONSOLE_PATH}?page=${pageNo + 1}">Next page</a>`
        : 'End of the list.'
    }</p>`,
  });
}

function stateOf(t: ServedTenant) {
  const enabled = t.record.enabled ? 'enabled' : 'disabled';
  if (t.problem === undefined)
    return html`<span class="verdict ${t.record.enabled ? 'pass' : 'warn'}">${enabled}</span>`;
  return html`<span class="verdict fail">${enabled}, not serving</span> ${t.problem}`;
}

function actionOf(t: ServedTenant) {
  const { id } = t.record;
  return t.record.enabled
    ? html`<form class="action" data-api="${CONSOLE_PATH}/api/tenants/${id}/disable" data-confirm="Disable tenant ${id}? Its issuance and admin changes stop at once (503 TENANT_DISABLED); its status lists, DID and keys go on being served." data-done="Tenant ${id} disabled."><button type="submit" aria-label="Disable ${id}">Disable…</button></form>`
    : html`<form class="action" data-api="${CONSOLE_PATH}/api/tenants/${id}/enable" data-confirm="Enable tenant ${id}? It issues and takes admin changes again." data-done="Tenant ${id} enabled."><button type="submit" aria-label="Enable ${id}">Enable…</button></form>`;
}
