import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { parse as parseCookies, serialize as serializeCookie } from 'cookie';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { AppContext } from '../../../context.js';
import { AppError } from '../../../errors.js';
import type { ConsoleSessionLimits } from '../../../store/store.js';

/** The session cookie; its Path keeps it off every route but the console's. */
export const SESSION_COOKIE = 'console_session';
export const CONSOLE_PATH = '/console';

const sha256 = (s: string) => hash('sha256', s, 'hex');

/** The CSRF token of a session: derived from its id (which only its browser holds), never stored. */
export const csrfTokenOf = (sessionId: string): string =>
  hash('sha256', `console-csrf\0${sessionId}`, 'base64url');

/** What a signed-in request carries in `res.locals.console`. */
export interface ConsoleRequest {
  actor: string;
  csrf: string;
}

export function sessionLimits(ctx: Pick<AppContext, 'config'>): ConsoleSessionLimits {
  const { idleSeconds, absoluteSeconds } = ctx.config.console;
  return { idleMs: idleSeconds * 1000, absoluteMs: absoluteSeconds * 1000 };
}

function cookieOptions(ctx: Pick<AppContext, 'config'>) {
  return {
    httpOnly: true,
    sameSite: 'strict' as const,
    path: CONSOLE_PATH,
    secure: ctx.config.production,
  };
}

const sessionIdOf = (req: Request): string | undefined => {
  const id = parseCookies(req.get('cookie') ?? '')[SESSION_COOKIE];
  return id && /^[A-Za-z0-9_-]{43}$/.test(id) ? id : undefined;
};

/** Starts a session for `actor`: a random id in the cookie, its SHA-256 in the database. */
export async function startSession(ctx: Pick<AppContext, 'config' | 'store'>, res: Response, actor: string) {
  const id = randomBytes(32).toString('base64url');
  const now = new Date();
  // Sessions that ended are removed as new ones start: the table holds live ones and a few more.
  await ctx.store.console.endExpiredSessions(now, sessionLimits(ctx));
  await ctx.store.console.createSession(sha256(id), actor, now);
  res.append(
    'Set-Cookie',
    serializeCookie(SESSION_COOKIE, id, {
      ...cookieOptions(ctx),
      maxAge: ctx.config.console.absoluteSeconds,
    }),
  );
}

/** Ends the request's session on the server and clears the cookie. */
export async function endSession(ctx: Pick<AppContext, 'config' | 'store'>, req: Request, res: Response) {
  const id = sessionIdOf(req);
  if (id) await ctx.store.console.endSession(sha256(id));
  res.append('Set-Cookie', serializeCookie(SESSION_COOKIE, '', { ...cookieOptions(ctx), maxAge: 0 }));
}

/**
 * A signed-in session or, for a page, a redirect to the sign-in page (an API call gets 401). The
 * session's last request moves to now; one idle past CONSOLE_SESSION_IDLE_SECONDS or older than
 * CONSOLE_SESSION_ABSOLUTE_SECONDS has ended and is removed.
 */
export function requireSession(
  ctx: Pick<AppContext, 'config' | 'store'>,
  kind: 'page' | 'api',
): RequestHandler {
  const limits = sessionLimits(ctx);
  return async (req, res, next) => {
    const id = sessionIdOf(req);
    const session = id ? await ctx.store.console.useSession(sha256(id), new Date(), limits) : undefined;
    if (!session || !id) {
      if (id)
        res.append('Set-Cookie', serializeCookie(SESSION_COOKIE, '', { ...cookieOptions(ctx), maxAge: 0 }));
      if (kind === 'api') {
        next(new AppError('UNAUTHORIZED', 'console: not signed in, or the session has ended'));
        return;
      }
      const back = req.method === 'GET' ? `?next=${encodeURIComponent(req.originalUrl)}` : '';
      res.redirect(303, `${CONSOLE_PATH}/sign-in${back}`);
      return;
    }
    res.locals.console = { actor: session.actor, csrf: csrfTokenOf(id) } satisfies ConsoleRequest;
    // The audit actor of the admin handlers the console calls (src/http/routes/admin/fields.ts).
    res.locals.actor = session.actor;
    next();
  };
}

/** The origin the browser shows for this listener (behind TRUST_PROXY, the proxy's). */
const ownOrigin = (req: Request) => `${req.protocol}://${req.get('host') ?? ''}`;

/**
 * A state-changing request must come from a console page: from our own origin (`Origin`, and
 * `Sec-Fetch-Site` when the browser sends it) and, once signed in, with the session's CSRF token
 * (`x-csrf-token`, or `_csrf` in a form). Anything else is 403, and logged.
 */
export function sameOrigin(ctx: Pick<AppContext, 'log'>): RequestHandler {
  return (req, _res, next) => {
    const origin = req.get('origin');
    const site = req.get('sec-fetch-site');
    if (
      (origin !== undefined && origin !== ownOrigin(req)) ||
      (site !== undefined && site !== 'same-origin')
    ) {
      refuse(ctx, req, next, 'foreign origin');
      return;
    }
    next();
  };
}

export function requireCsrf(ctx: Pick<AppContext, 'log'>): RequestHandler {
  return (req, res, next) => {
    const expected = (res.locals.console as ConsoleRequest).csrf;
    const body = req.body as Record<string, unknown> | undefined;
    const got = req.get('x-csrf-token') ?? (typeof body?._csrf === 'string' ? body._csrf : undefined);
    const a = Buffer.from(got ?? '');
    const b = Buffer.from(expected);
    if (got === undefined || a.length !== b.length || !timingSafeEqual(a, b)) {
      refuse(ctx, req, next, got === undefined ? 'missing CSRF token' : 'wrong CSRF token');
      return;
    }
    next();
  };
}

function refuse(ctx: Pick<AppContext, 'log'>, req: Request, next: NextFunction, why: string) {
  ctx.log.warn(
    { event: 'console_refused', reason: why, method: req.method, path: req.path, origin: req.get('origin') },
    `console: ${req.method} ${req.path} refused (${why})`,
  );
  next(new AppError('FORBIDDEN', `console: ${why}`));
}
