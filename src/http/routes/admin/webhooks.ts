import type { Request, Response } from 'express';
import { z } from 'zod';
import { invalidParameter, notFound } from '../../../errors.js';
import { WEBHOOK_EVENT_TYPES } from '../../../events/catalogue.js';
import type { AuditAction } from '../../../model.js';
import type { AuditStore } from '../../../store/store.js';
import { type EndpointPolicy, endpointUrlProblem } from '../../../webhooks/endpoint-address.js';
import type { Webhooks } from '../../../webhooks/webhooks.js';
import { parseInput } from '../../middleware/validate.js';
import { Timestamp } from '../responses.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { auditActor } from './fields.js';
import { deliveryCursor, PaginationSchema, PagingShape, readDeliveryCursor, wholeNumber } from './paging.js';

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

/** An endpoint as the admin API shows it (never its secret, but in the answer that made it). */
const WebhookEndpointSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string().nullable(),
  createdAt: Timestamp,
});
const WebhooksListSchema = z.object({ webhooks: z.array(WebhookEndpointSchema) });
const DeliveriesPageSchema = z.object({
  deliveries: z.array(
    z.object({
      id: z.string(),
      eventId: z.string(),
      type: z.string(),
      sequence: z.number().int(),
      state: z.enum(['pending', 'delivered', 'failed']),
      attempts: z.number().int(),
      nextAttemptAt: Timestamp.nullable(),
      lastStatus: z.number().int().nullable(),
      lastError: z.string().nullable(),
      deliveredAt: Timestamp.nullable(),
      createdAt: Timestamp,
    }),
  ),
  pagination: PaginationSchema.pick({ limit: true, nextCursor: true }),
});

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
          schema: WebhookEndpointSchema.extend({ secret: z.string() }),
        },
      },
    },
    handler: addWebhook(ctx.webhooks, schema, audited(ctx)),
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
    responses: json200('`{ webhooks: [{ id, url, events, description, createdAt }] }`', WebhooksListSchema),
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
    responses: json200('`{ removed: id }`', z.object({ removed: z.string() })),
    errors: ['NOT_FOUND'],
  },
  handler: removeWebhook(ctx.webhooks, audited(ctx)),
});

/** Records an endpoint change in the audit log with the admin key's name, once it is made. */
type Audit = (res: Response, action: AuditAction, target: string) => Promise<void>;

const audited =
  (ctx: { store: { audit: Pick<AuditStore, 'record'> } }): Audit =>
  (res, action, target) =>
    ctx.store.audit.record({ ...auditActor(res, undefined), at: new Date(), action, target });

export function addWebhook(
  webhooks: Pick<Webhooks, 'add'>,
  schema: z.ZodType<WebhookEndpointBody>,
  audit: Audit,
) {
  return async (req: Request, res: Response) => {
    const body = parseInput(schema, req.body);
    // `*` alone stands for every type; listed beside others it still means every type.
    const events = body.events.includes('*') ? ['*'] : [...new Set(body.events)];
    const added = await webhooks.add({ ...body, events });
    await audit(res, 'webhooks.add', `${added.id} ${added.url}`);
    res.status(201).json(added);
  };
}

export function listWebhooks(webhooks: Pick<Webhooks, 'list'>) {
  return async (_req: Request, res: Response) => {
    res.json({ webhooks: await webhooks.list() });
  };
}

export function removeWebhook(webhooks: Pick<Webhooks, 'remove'>, audit: Audit) {
  return async (req: Request, res: Response) => {
    const { id } = parseInput(z.object({ id: WebhookIdSchema }), req.params, 'query');
    if (!(await webhooks.remove(id))) throw notFound(`id: no webhook ${id}`);
    await audit(res, 'webhooks.remove', id);
    res.json({ removed: id });
  };
}

/** `POST /admin/webhooks/:id/rotate-secret` → `{ id, secret, previousValidUntil }`. */
export const rotateWebhookSecretRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/webhooks/:id/rotate-secret',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-webhooks-rotate-secret',
    summary: 'A new signing secret (shown once); the old one keeps signing beside it for 24 h',
    tags: TAGS.admin,
    params: { id: WebhookIdSchema },
    responses: json200(
      '`{ id, secret, previousValidUntil }`',
      z.object({ id: z.string(), secret: z.string(), previousValidUntil: Timestamp }),
    ),
    errors: ['NOT_FOUND'],
  },
  handler: async (req: Request, res: Response) => {
    const { id } = parseInput(z.object({ id: WebhookIdSchema }), req.params, 'query');
    const rotated = await ctx.webhooks.rotateSecret(id);
    if (!rotated) throw notFound(`id: no webhook ${id}`);
    await audited(ctx)(res, 'webhooks.rotate-secret', id);
    res.json(rotated);
  },
});

export const DeliveriesQuerySchema = z.strictObject({
  status: z
    .enum(['pending', 'delivered', 'failed'], { error: 'must be pending, delivered or failed' })
    .optional(),
  limit: wholeNumber('limit', 1, 500).default(100),
  cursor: PagingShape.cursor,
});

/**
 * `GET /admin/webhooks/:id/deliveries?status=pending|delivered|failed&limit=&cursor=` →
 * `{ deliveries: [...], pagination: { limit, nextCursor } }`, newest event first, keyset-paged
 * (docs/interface.md "Paging").
 */
export const webhookDeliveriesRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/admin/webhooks/:id/deliveries',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-webhooks-deliveries',
    summary: "A page of an endpoint's deliveries, newest first",
    tags: TAGS.admin,
    params: { id: WebhookIdSchema },
    query: DeliveriesQuerySchema,
    responses: json200(
      '`{ deliveries: [{ id, eventId, type, sequence, state, attempts, lastStatus, lastError, … }], pagination: { limit, nextCursor } }`',
      DeliveriesPageSchema,
    ),
    errors: ['NOT_FOUND'],
  },
  handler: async (req: Request, res: Response) => {
    const { id } = parseInput(z.object({ id: WebhookIdSchema }), req.params, 'query');
    const q = parseInput(DeliveriesQuerySchema, req.query, 'query');
    const before = q.cursor === undefined ? undefined : readDeliveryCursor(q.cursor);
    if (q.cursor !== undefined && before === undefined)
      throw invalidParameter('cursor', 'not a cursor of this route');
    const page = await ctx.webhooks.deliveries(id, { state: q.status, limit: q.limit, before });
    if (!page) throw notFound(`id: no webhook ${id}`);
    res.json({
      deliveries: page.deliveries,
      pagination: { limit: q.limit, nextCursor: page.next === null ? null : deliveryCursor(page.next) },
    });
  },
});

/** `POST /admin/webhooks/:id/retry-failed` → `{ id, retried }`: every failed delivery of the endpoint queued again. */
export const retryFailedWebhookDeliveriesRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/webhooks/:id/retry-failed',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-webhooks-retry-failed',
    summary: 'Queue every failed delivery of an endpoint again (same webhook-ids, attempts from 0)',
    tags: TAGS.admin,
    params: { id: WebhookIdSchema },
    responses: json200(
      '`{ id, retried }`: how many deliveries were queued again',
      z.object({ id: z.string(), retried: z.number().int() }),
    ),
    errors: ['NOT_FOUND'],
  },
  handler: async (req: Request, res: Response) => {
    const { id } = parseInput(z.object({ id: WebhookIdSchema }), req.params, 'query');
    const retried = await ctx.webhooks.retryFailed(id);
    if (retried === undefined) throw notFound(`id: no webhook ${id}`);
    await audited(ctx)(res, 'webhooks.retry', `${id} (${retried} failed)`);
    res.json({ id, retried });
  },
});

const DeliveryIdSchema = z.string().regex(/^msg_[0-9a-f-]{36}$/, 'not a delivery id');

/** `POST /admin/webhooks/deliveries/:deliveryId/retry` → `{ retried: deliveryId }`. */
export const retryWebhookDeliveryRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/webhooks/deliveries/:deliveryId/retry',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-webhooks-delivery-retry',
    summary: 'Queue a failed delivery again (same webhook-id, attempts from 0)',
    tags: TAGS.admin,
    params: { deliveryId: DeliveryIdSchema },
    responses: json200('`{ retried: deliveryId }`', z.object({ retried: z.string() })),
    errors: ['NOT_FOUND'],
  },
  handler: async (req: Request, res: Response) => {
    const { deliveryId } = parseInput(z.object({ deliveryId: DeliveryIdSchema }), req.params, 'query');
    if (!(await ctx.webhooks.retry(deliveryId)))
      throw notFound(`deliveryId: no failed delivery ${deliveryId}`);
    await audited(ctx)(res, 'webhooks.retry', deliveryId);
    res.json({ retried: deliveryId });
  },
});
