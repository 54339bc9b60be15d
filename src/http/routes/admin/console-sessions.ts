import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { notFound } from '../../../errors.js';
import { parseInput } from '../../middleware/validate.js';
import { liveKeyCheck, sessionLimits } from '../console/session.js';
import { Timestamp } from '../responses.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { auditActor } from './fields.js';

/** A session's id here: the SHA-256 the database keeps of its cookie, never the cookie. */
const SessionIdSchema = z.string().regex(/^[0-9a-f]{64}$/, 'not a console session id (64 hex digits)');

const ConsoleSessionsSchema = z.object({
  sessions: z.array(
    z.object({
      id: z.string(),
      actor: z.string(),
      createdAt: Timestamp,
      lastSeenAt: Timestamp,
      endsAt: Timestamp,
    }),
  ),
});
const EndedSessionSchema = z.object({ ended: z.string() });

/**
 * `GET /admin/console/sessions` → `{ sessions: [{ id, actor, createdAt, lastSeenAt, endsAt }] }`:
 * the console sign-ins that are live (docs/operations.md "The admin console"): not idle, not too
 * old, opened with an admin key this instance still accepts; oldest first.
 */
export const listConsoleSessionsRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/admin/console/sessions',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-console-sessions-list',
    summary: 'The live admin console sessions',
    tags: TAGS.admin,
    responses: json200('The live console sessions, oldest first', ConsoleSessionsSchema),
  },
  handler: listConsoleSessions(ctx),
});

export function listConsoleSessions(ctx: Pick<AppContext, 'config' | 'store' | 'secrets'>) {
  const limits = sessionLimits(ctx);
  const keyIsLive = liveKeyCheck(ctx);
  return async (_req: Request, res: Response) => {
    const sessions = await ctx.store.consoleSessions.list(new Date(), limits);
    res.json({
      sessions: sessions.filter(keyIsLive).map((s) => ({
        id: s.idHash,
        actor: s.actor,
        createdAt: s.createdAt.toISOString(),
        lastSeenAt: s.lastSeenAt.toISOString(),
        // Whichever comes first: idle past the limit, or the absolute limit after sign-in.
        endsAt: new Date(
          Math.min(s.lastSeenAt.getTime() + limits.idleMs, s.createdAt.getTime() + limits.absoluteMs),
        ).toISOString(),
      })),
    } satisfies z.infer<typeof ConsoleSessionsSchema>);
  };
}

/** `DELETE /admin/console/sessions/:id` → `{ ended: id }`; its next request asks to sign in. */
export const endConsoleSessionRoute: RouteFactory = (ctx) => ({
  method: 'delete',
  path: '/admin/console/sessions/:id',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-console-sessions-end',
    summary: 'End an admin console session at once, on every instance',
    tags: TAGS.admin,
    params: { id: SessionIdSchema },
    responses: json200('The session ended', EndedSessionSchema),
    errors: ['NOT_FOUND'],
  },
  handler: async (req: Request, res: Response) => {
    const { id } = parseInput(z.object({ id: SessionIdSchema }), req.params, 'query');
    if (!(await ctx.store.consoleSessions.end(id))) throw notFound(`id: no console session ${id}`);
    await ctx.store.audit.record({
      ...auditActor(res, undefined),
      at: new Date(),
      action: 'console.session-end',
      target: id,
    });
    res.json({ ended: id } satisfies z.infer<typeof EndedSessionSchema>);
  },
});
