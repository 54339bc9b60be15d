import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type Request, type RequestHandler, type Response } from 'express';
import swaggerUi from 'swagger-ui-dist';
import { AppError } from '../errors.js';
import { type Readiness, readiness } from '../observability/health.js';
import type { IssuerMetrics } from '../observability/metrics.js';

/** issue 10 `GET /healthz`: the process can answer. */
export function healthz() {
  return (_req: Request, res: Response) => {
    res.set('cache-control', 'no-store').json({ status: 'ok' });
  };
}

/** issue 10 `GET /readyz`: 200 ready, 503 naming the failing check (and from the start of a drain). */
export function readyz(parts: Parameters<typeof readiness>[0]) {
  return async (_req: Request, res: Response) => {
    const { ready, checks }: Readiness = await readiness(parts);
    res
      .status(ready ? 200 : 503)
      .set('cache-control', 'no-store')
      .json({ status: ready ? 'ready' : 'not_ready', checks });
  };
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** issue 10 `GET /metrics`: Prometheus text; `Authorization: Bearer <METRICS_TOKEN>` when one is set. */
export function metricsRoute(metrics: IssuerMetrics, token: string | undefined) {
  const want = token === undefined ? undefined : digest(token);
  return async (req: Request, res: Response) => {
    if (want) {
      // RFC 9110 §11.1: the auth scheme is case-insensitive (`bearer`, `BEARER`).
      const got = /^bearer +(\S+) *$/i.exec(req.get('authorization') ?? '')?.[1];
      // Hashing both sides first makes the comparison constant-time whatever the lengths.
      if (got === undefined || !timingSafeEqual(digest(got), want)) {
        res.set('www-authenticate', 'Bearer realm="metrics"');
        throw new AppError('UNAUTHORIZED', 'metrics: missing or wrong bearer token');
      }
    }
    res.set('content-type', metrics.registry.contentType).send(await metrics.scrape());
  };
}

/** `GET /openapi.json`: the document is built once, from the route table. */
export function openApiRoute(document: () => unknown) {
  let body: string | undefined;
  return (_req: Request, res: Response) => {
    body ??= JSON.stringify(document());
    res.type('application/json').send(body);
  };
}

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>issuer-kit API</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/docs-init.js"></script>
</body>
</html>
`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
});
`;

/**
 * `GET /docs`: Swagger UI rendering `/openapi.json`, every asset served from this origin by the
 * swagger-ui-dist package (no CDN; the page fetches nothing from elsewhere).
 */
export function docsRoutes(): RequestHandler[] {
  const assets = express.static(swaggerUi.getAbsoluteFSPath(), { index: false, fallthrough: true });
  const router = express.Router();
  router.get('/docs', (_req, res) => {
    res.type('html').send(DOCS_PAGE);
  });
  router.get('/docs/docs-init.js', (_req, res) => {
    res.type('application/javascript').send(DOCS_INIT);
  });
  router.use('/docs', assets);
  return [router];
}
