import type { Request, Response } from 'express';
import { type Readiness, readiness } from '../../../observability/health.js';
import { json200, type RouteFactory, TAGS } from '../route.js';

/** `GET /healthz`: liveness, the process can answer. */
export const healthzRoute: RouteFactory = () => ({
  method: 'get',
  path: '/healthz',
  group: 'ops',
  auth: 'none',
  doc: {
    operationId: 'healthz',
    summary: 'Liveness: `{"status":"ok"}` while the process can answer',
    tags: TAGS.ops,
    responses: json200('`{ "status": "ok" }`'),
  },
  handler: (_req: Request, res: Response) => {
    res.set('cache-control', 'no-store').json({ status: 'ok' });
  },
});

/** `GET /readyz`: 200 ready, 503 naming the failing check (and from the start of a drain). */
export const readyzRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/readyz',
  group: 'ops',
  auth: 'none',
  doc: {
    operationId: 'readyz',
    summary: 'Readiness: database, keys, schemas, recovery; 503 naming the failing check or while draining',
    tags: TAGS.ops,
    responses: {
      200: { description: '`{ status: "ready", checks }`', contentType: 'application/json' },
      503: { description: '`{ status: "not_ready", checks }`', contentType: 'application/json' },
    },
  },
  handler: readyz(ctx),
});

function readyz(parts: Parameters<typeof readiness>[0]) {
  return async (_req: Request, res: Response) => {
    const { ready, checks }: Readiness = await readiness(parts);
    res
      .status(ready ? 200 : 503)
      .set('cache-control', 'no-store')
      .json({ status: ready ? 'ready' : 'not_ready', checks });
  };
}
