import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request } from 'express';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { z } from 'zod';
import { AppError, ERROR_STATUS } from '../errors.js';
import { requireBearer, requireKey } from '../http/middleware/auth.js';
import { errorHandler } from '../http/middleware/error-handler.js';
import { jsonBody } from '../http/middleware/json-body.js';
import { parseInput } from '../http/middleware/validate.js';
import type { Listener } from '../http/routes/route.js';
import type { Deployment, ServedTenant } from './deployment.js';
import { operatorConsoleRouter } from './operator-console.js';
import { deploymentReadiness, healthOf, withServing } from './operator-view.js';
import { AddTenantSchema, ChangeTenantSchema, operatorView, TenantIdSchema } from './tenant.js';

/** The operator's actor name in the deployment's audit. */
export const OPERATOR_ACTOR = 'operator';

/** Methods that change nothing: what a disabled tenant still answers. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

function answer(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status, { 'content-length': '0' }).end();
    return;
  }
  res
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
    .end(JSON.stringify(body));
}

/**
 * The request handler of one listener of a `TENANCY=multi` process (docs/several-issuers.md
 * "Routing"): a request goes to the tenant its host names, whose own app (the same as a single
 * deployment's) serves it; the operator routes and the probes answer on every other host; any
 * other request gets 404 with an empty body. A disabled tenant answers its reads (status lists,
 * DID, metadata, admin reads) and 503 `TENANT_DISABLED` to everything else.
 */
export function deploymentHandler(
  deployment: Deployment,
  serves: Listener | 'all',
): (req: IncomingMessage, res: ServerResponse) => void {
  // Express compiles TRUST_PROXY into the function that says whose X-Forwarded-Host to believe.
  const own = deploymentApp(deployment, serves);
  const trust = own.get('trust proxy fn') as (address: string | undefined, hop: number) => boolean;
  const hostOf = (req: IncomingMessage): string | undefined => {
    const forwarded = req.headers['x-forwarded-host'];
    if (typeof forwarded === 'string' && forwarded !== '' && trust(req.socket.remoteAddress, 0))
      return forwarded.split(',')[0]!.trim();
    return req.headers.host;
  };
  return (req, res) => {
    const tenant = deployment.byHost(hostOf(req));
    if (!tenant) {
      own(req, res);
      return;
    }
    serveTenant(tenant, serves, req, res);
  };
}

function serveTenant(
  tenant: ServedTenant,
  serves: Listener | 'all',
  req: IncomingMessage,
  res: ServerResponse,
): void {
  if (!tenant.record.enabled && !READS.has(req.method ?? 'GET')) {
    answer(res, ERROR_STATUS.TENANT_DISABLED, {
      code: 'TENANT_DISABLED',
      message: 'this issuer is disabled by the deployment operator: no issuance and no admin changes',
    });
    return;
  }
  const app = tenant.apps[serves];
  if (!app) {
    res.setHeader('retry-after', '5');
    answer(res, ERROR_STATUS.UNAVAILABLE, { code: 'UNAVAILABLE', message: 'this issuer is not serving now' });
    return;
  }
  // A change may have written an event: the tenant's webhook look, however far it has backed off
  // while the tenant was idle, comes within its interval of the answer.
  if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS')
    res.once('finish', () => tenant.ctx?.webhooks.lookSoon());
  app(req, res);
}

const TenantParams = z.object({ id: TenantIdSchema });
const idOf = (req: Request) => parseInput(TenantParams, req.params, 'query').id;

/**
 * The deployment's own routes, on hosts that are no tenant's: liveness, readiness, and the operator
 * routes (`x-operator-api-key`), which list, add, show, change, disable, enable and remove tenants and show
 * each one's health, volume and failing uploads, never a claim or a credential.
 */
function deploymentApp(deployment: Deployment, serves: Listener | 'all'): express.Express {
  const { config, secrets, log } = deployment.options;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.set('trust proxy', config.trustProxy);
  if (serves !== 'admin') {
    app.get('/healthz', (_req, res) => {
      res.set('cache-control', 'no-store').json({ status: 'ok' });
    });
    // docs/several-issuers.md "Routing": ready while the deployment's own database answers and no
    // drain has begun, as a single deployment's probe. Counts only: a host that is no tenant's never
    // names one (docs/security.md "Tenants kept apart"); which ones fail, `GET /operator/tenants` shows.
    app.get('/readyz', async (_req, res) => {
      const served = deployment.served();
      const failing = served.filter((t) => t.problem !== undefined).length;
      const checks = await deploymentReadiness(deployment);
      const ready = checks.database.ok && checks.shutdown.ok;
      res
        .status(ready ? 200 : 503)
        .set('cache-control', 'no-store')
        .json({ status: ready ? 'ready' : 'not_ready', tenants: served.length, failing, checks });
    });
  }
  // The process's own metrics, once for all tenants (each tenant's /metrics has its issuer's).
  if (serves === (config.admin ? 'admin' : 'all')) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    new Gauge({
      name: 'issuer_tenants',
      help: 'Tenants of the registry, by whether this process serves them',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        const all = deployment.served();
        const failing = all.filter((t) => t.problem !== undefined).length;
        this.set({ state: 'serving' }, all.length - failing);
        this.set({ state: 'failing' }, failing);
      },
    });
    app.get('/metrics', requireBearer(secrets.metricsToken, 'metrics'), async (_req, res) => {
      res.set('content-type', registry.contentType).send(await registry.metrics());
    });
  }
  if (serves !== 'public') {
    const operator = express.Router({ caseSensitive: true, strict: true });
    const key = secrets.operatorApiKey;
    operator.use(
      key === undefined
        ? (_req, _res, next) =>
            next(new AppError('FORBIDDEN', 'OPERATOR_API_KEY is not set on this deployment'))
        : requireKey('x-operator-api-key', key),
    );
    operator.get('/tenants', (_req, res) => {
      res.json({ tenants: deployment.served().map((t) => withServing(t)) });
    });
    operator.post('/tenants', jsonBody(), async (req, res) => {
      const input = parseInput(AddTenantSchema, req.body);
      const served = await deployment.add(input, OPERATOR_ACTOR);
      res.status(201).json({ tenant: withServing(served) });
    });
    operator.post('/tenants/adopt', jsonBody(), async (req, res) => {
      const input = parseInput(AddTenantSchema, req.body);
      const served = await deployment.adopt(input, OPERATOR_ACTOR);
      res.status(201).json({ tenant: withServing(served) });
    });
    operator.get('/tenants/:id', async (req, res) => {
      const served = deployment.byId(idOf(req));
      if (!served) throw new AppError('NOT_FOUND', `no tenant ${req.params.id}`);
      res.json({ tenant: withServing(served), health: await healthOf(served) });
    });
    operator.patch('/tenants/:id', jsonBody(), async (req, res) => {
      const input = parseInput(ChangeTenantSchema, req.body);
      const served = await deployment.change(idOf(req), input, OPERATOR_ACTOR);
      res.json({ tenant: withServing(served) });
    });
    for (const [action, enabled] of [
      ['disable', false],
      ['enable', true],
    ] as const)
      operator.post(`/tenants/:id/${action}`, async (req, res) => {
        const record = await deployment.setEnabled(idOf(req), enabled, OPERATOR_ACTOR);
        res.json({ tenant: operatorView(record) });
      });
    operator.delete('/tenants/:id', async (req, res) => {
      const id = idOf(req);
      await deployment.remove(id, OPERATOR_ACTOR);
      res.json({ removed: id });
    });
    operator.get('/audit', async (_req, res) => {
      res.json({ audit: await deployment.namespaces.registry.audit(200) });
    });
    app.use('/operator', operator);
    // docs/several-issuers.md "The operator's console": CONSOLE=on, where the operator routes answer.
    if (config.console.enabled && key !== undefined)
      app.use('/console', operatorConsoleRouter(deployment, key));
  }
  app.use((_req, res) => {
    res.status(404).end();
  });
  app.use(errorHandler(log));
  return app;
}
