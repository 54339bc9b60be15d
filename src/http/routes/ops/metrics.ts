import type { Request, Response } from 'express';
import type { IssuerMetrics } from '../../../observability/metrics.js';
import { type RouteFactory, TAGS } from '../route.js';

/**
 * `GET /metrics`: Prometheus text. `Authorization: Bearer <METRICS_TOKEN>` when one is set; with
 * ADMIN_PORT it answers on the admin listener only.
 */
export const metricsRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/metrics',
  group: 'ops',
  auth: 'metrics-token',
  listener: 'admin',
  doc: {
    operationId: 'metrics',
    summary: 'Prometheus metrics (Bearer METRICS_TOKEN when set)',
    tags: TAGS.ops,
    responses: { 200: { description: 'Prometheus text format', contentType: 'text/plain' } },
  },
  handler: scrape(ctx.metrics),
});

function scrape(metrics: IssuerMetrics) {
  return async (_req: Request, res: Response) => {
    res.set('content-type', metrics.registry.contentType).send(await metrics.scrape());
  };
}
