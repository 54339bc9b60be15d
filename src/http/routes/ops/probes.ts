import type { Request, Response } from 'express';
import { z } from 'zod';
import { type Readiness, readiness } from '../../../observability/health.js';
import { json200, type RouteFactory, TAGS } from '../route.js';

const HealthSchema = z.object({ status: z.literal('ok') });

const CheckSchema = z.object({ ok: z.boolean(), error: z.string().optional() });
/** `GET /readyz`'s answer (docs/operations.md "Health"): the checks, whether ready or not. */
export const ReadinessSchema = z.object({
  status: z.enum(['ready', 'not_ready']),
  checks: z.object({
    database: CheckSchema,
    keys: CheckSchema,
    schemas: CheckSchema.extend({ count: z.number().int().optional() }),
    recovery: CheckSchema,
    shutdown: CheckSchema,
    outbox: z.object({
      pending: z.number().int().nullable(),
      oldestAgeSeconds: z.number().nullable(),
      failed: z.number().int().nullable(),
    }),
  }),
});

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
    responses: json200('`{ "status": "ok" }`', HealthSchema),
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
      200: {
        description: '`{ status: "ready", checks }`',
        contentType: 'application/json',
        schema: ReadinessSchema,
      },
      503: {
        description: '`{ status: "not_ready", checks }`',
        contentType: 'application/json',
        schema: ReadinessSchema,
      },
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
