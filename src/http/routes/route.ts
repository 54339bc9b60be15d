import type { RequestHandler } from 'express';
import type { z } from 'zod';
import type { AppContext } from '../../context.js';
import type { ErrorCode } from '../../errors.js';
import type { RouteGroup } from '../../model.js';

/**
 * The route group: it chooses the rate limit, the CORS policy and (with ADMIN_PORT) the listener.
 * `holder`, `admin` and `public` have their own RATE_LIMIT_*_PER_MIN; `ops` is never limited.
 */
export type Group = RouteGroup | 'ops';

/**
 * Who may call the route: `api-key` (x-api-key, the hosting service), `admin-api-key`
 * (x-admin-api-key, the issuer's own servers, never a browser), `metrics-token` (Bearer
 * METRICS_TOKEN when one is set) or `none`. A missing or wrong key is 403, a wrong token 401.
 */
export type RouteAuth = 'api-key' | 'admin-api-key' | 'metrics-token' | 'none';

/** A socket the app listens on: the main one, or the ADMIN_PORT one when set. */
export type Listener = 'public' | 'admin';

/**
 * What a route says about its contract: the zod schemas its handler validates with, its answers
 * and the error codes it can give. `GET /openapi.json` is generated from these.
 */
export interface RouteDoc {
  summary: string;
  operationId: string;
  tags: readonly string[];
  body?: z.ZodType;
  query?: z.ZodObject;
  /** Path parameters by name (`:nonce`); a parameter without a schema is a plain string. */
  params?: Record<string, z.ZodType>;
  responses: Record<
    number,
    { description: string; contentType?: string | readonly string[]; schema?: z.ZodType }
  >;
  /** Error codes the handler itself can answer (the ones of its auth, group and body are added). */
  errors?: ErrorCode[];
}

/** One row of the route table: everything about an endpoint, next to its handler. */
export interface Route {
  method: 'get' | 'post' | 'delete';
  /** Express path (`/statuslist/:partition`). */
  path: string;
  group: Group;
  auth: RouteAuth;
  /** The listener that serves it when ADMIN_PORT splits them (default: its group's). */
  listener?: Listener;
  /**
   * Documented by this row but mounted by path from the current schema set (`createApp`): a
   * schema reload changes these paths without a restart.
   */
  mountedByPath?: true;
  /** The POST body is `application/x-www-form-urlencoded` (an OAuth token request), not JSON. */
  form?: true;
  /**
   * The POST body may also be `application/jwt` (an encrypted OpenID4VCI credential request,
   * OpenID4VCI 1.0 §10): then its compact text is `req.body`, a string.
   */
  jwtBody?: true;
  /** The JSON body's limit in bytes when a route needs more than the default 100 kB. */
  jsonLimit?: number;
  /** `Idempotency-Key` is honoured, its answers kept under this scope. */
  idempotency?: string;
  doc: RouteDoc;
  handler: RequestHandler;
}

/**
 * An endpoint module's export: the route(s) it serves in this app (none when a feature is off,
 * several when one handler serves a path per schema). `routes` is the whole table, for the one
 * route that describes it (`GET /openapi.json`).
 */
export type RouteFactory = (ctx: AppContext, routes: () => readonly Route[]) => Route | readonly Route[];

/** OpenAPI tag of each group. */
export const TAGS = {
  holder: ['holder-facing'],
  admin: ['admin'],
  public: ['public'],
  ops: ['operations'],
} as const satisfies Record<Group, readonly string[]>;

/** A JSON 200 answer: a line and the schema of its body (docs/operations.md "API contract and docs page"). */
export const json200 = (description: string, schema: z.ZodType): RouteDoc['responses'] => ({
  200: { description, contentType: 'application/json', schema },
});

/** A public GET whose JSON answer is described in one line and a schema. */
export const publicDoc = (
  operationId: string,
  description: string,
  schema: z.ZodType,
  contentType = 'application/json',
): RouteDoc => ({
  operationId,
  summary: description,
  tags: TAGS.public,
  responses: { 200: { description, contentType, schema } },
});
