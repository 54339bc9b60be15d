import type { Request, Response } from 'express';
import { z } from 'zod';
import { notFound } from '../../../errors.js';
import { type EndpointPolicy, endpointUrlProblem } from '../../../webhooks/endpoint-address.js';
import { WEBHOOK_EVENT_TYPES, type Webhooks } from '../../../webhooks/webhooks.js';
import { parseInput } from '../../middleware/validate.js';
import { json200, type RouteFactory, TAGS } from '../route.js';

const EventTypeSchema = z.enum(['*', ...WEBHOOK_EVENT_TYPES], {
  error: `must be * or one of ${WEBHOOK_EVENT_TYPES.join(', ')}`,
});

export function webhookEndpointBodySchema(policy: EndpointPolicy) {
  return z.strictObject({
    url: z
      .string({ error: 'must be a URL' })
      .max(2048)
      .superRefine((url, ctx) => {
        const problem = endpointUrlProblem(url, policy);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    events: z.array(EventTypeSchema).min(1, 'must name at least one event type, or *').max(32),
    description: z.string().max(500).optional(),
  });
}
export type WebhookEndpointBody = z.infer<ReturnType<typeof webhookEndpointBodySchema>>;

const WebhookIdSchema = z.string().regex(/^wh_[0-9a-f-]{36}$/, 'not a webhook id');

/** `POST /admin/webhooks` → 201 `{ id, url, events, description, createdAt, secret }`. */
export const addWebhookRoute: RouteFactory = (ctx) => {
  const schema = webhookEndpointBodySchema({
    production: ctx.config.production,
    allowPrivate: ctx.config.webhookAllowPrivate,
  });
  return {
    method: 'post',
    path: '/admin/webhooks',
    group: 'admin',
    auth: 'admin-api-key',
    doc: {
      operationId: 'admin-webhooks-add',
      summary: 'Register a webhook endpoint; its signing secret is in this answer only',
      tags: TAGS.admin,
      body: schema,
      responses: {
        201: {
          description: '`{ id, url, events, description, createdAt, secret }`',
          contentType: 'application/json',
        },
      },
    },
    handler: addWebhook(ctx.webhooks, schema),
  };
};

/** `GET /admin/webhooks` → `{ webhooks: [...] }` (never a secret). */
export const listWebhooksRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/admin/webhooks',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-webhooks-list',
    summary: 'The registered webhook endpoints (without their secrets)',
    tags: TAGS.admin,
    responses: json200('`{ webhooks: [{ id, url, events, description, createdAt }] }`'),
  },
  handler: listWebhooks(ctx.webhooks),
});

/** `DELETE /admin/webhooks/:id` → `{ removed: id }`. */
export const removeWebhookRoute: RouteFactory = (ctx) => ({
  method: 'delete',
  path: '/admin/webhooks/:id',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-webhooks-remove',
    summary: 'Remove a webhook endpoint and its pending deliveries',
    tags: TAGS.admin,
    params: { id: WebhookIdSchema },
    responses: json200('`{ removed: id }`'),
    errors: ['NOT_FOUND'],
  },
  handler: removeWebhook(ctx.webhooks),
});

export function addWebhook(webhooks: Pick<Webhooks, 'add'>, schema: z.ZodType<WebhookEndpointBody>) {
  return async (req: Request, res: Response) => {
    const body = parseInput(schema, req.body);
    // `*` alone stands for every type; listed beside others it still means every type.
    const events = body.events.includes('*') ? ['*'] : [...new Set(body.events)];
    res.status(201).json(await webhooks.add({ ...body, events }));
  };
}

export function listWebhooks(webhooks: Pick<Webhooks, 'list'>) {
  return async (_req: Request, res: Response) => {
    res.json({ webhooks: await webhooks.list() });
  };
}

export function removeWebhook(webhooks: Pick<Webhooks, 'remove'>) {
  return async (req: Request, res: Response) => {
    const { id } = parseInput(z.object({ id: WebhookIdSchema }), req.params, 'query');
    if (!(await webhooks.remove(id))) throw notFound(`id: no webhook ${id}`);
    res.json({ removed: id });
  };
}
