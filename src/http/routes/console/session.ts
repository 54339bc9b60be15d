import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { parse as parseCookies, serialize as serializeCookie } from 'cookie';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Config, Secrets } from '../../../config/config.js';
import { AppError } from '../../../errors.js';
import type { Logger } from '../../../model.js';
import type { ConsoleSessionLimits, Store } from '../../../store/store.js';

/** The session cookie; its Path keeps it off every route but the console's. */
export const SESSION_COOKIE = 'console_session';
export const CONSOLE_PATH = '/console';

const sha256 = (s: string) => hash('sha256', s, 'hex');

/** The CSRF token of a session: derived from its id (which only its browser holds), never stored. */
export const csrfTokenOf = (sessionId: string): string =>
  hash('sha256', `console-csrf\0${sessionId}`, 'base64url');

/**
 * The fingerprint of the admin key a session was opened with, kept beside it: a session ends when
 * its key is no longer configured (docs/security.md "The admin console"). A one-way digest of a
 * secret of at least 96 bits (the production rule), never the key.
 */
export const keyFingerprint = (key: string): string => hash('sha256', `console-session-key\0${key}`, 'hex');

/**
 * What the session machinery needs of its app: an issuer's context, or the operator's console of a
 * `TENANCY=multi` deployment (its sessions in the registry, OPERATOR_API_KEY its one key).
 */
export interface SessionContext {
  config: Pick<Config, 'console' | 'production'>;
  store: Pick<Store, 'consoleSessions'>;
  secrets: Pick<Secrets, 'adminApiKeys'>;
  log: Logger;
}

/** What a signed-in request carries in `res.locals.console`. */
export interface ConsoleRequest {
  actor: string;
  csrf: string;
}

export function sessionLimits(ctx: Pick<SessionContext, 'config'>): ConsoleSessionLimits {
  const { idleSeconds, absoluteSeconds } = ctx.config.console;
  return { idleMs: idleSeconds * 1000, absoluteMs: absoluteSeconds * 1000 };
}

function cookieOptions(ctx: Pick<SessionContext, 'config'>) {
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

/**
 * Starts a session for `actor`, signed in with `key`: a random id in the cookie, its SHA-256 and
 * the key's fingerprint in the database.
 */
export async function startSession(
  ctx: Pick<SessionContext, 'config' | 'store'>,
  res: Response,
  actor: string,
  key: string,
) {
  const id = randomBytes(32).toString('base64url');
  const now = new Date();
  // Sessions that ended are removed as new ones start: the table holds live ones and a few more.
  await ctx.store.consoleSessions.endExpired(now, sessionLimits(ctx));
  await ctx.store.consoleSessions.create(sha256(id), actor, keyFingerprint(key), now);
  res.append(
    'Set-Cookie',
    serializeCookie(SESSION_COOKIE, id, {
      ...cookieOptions(ctx),
      maxAge: ctx.config.console.absoluteSeconds,
    }),
  );
}

/** Ends the request's session on the server and clears the cookie. */
export async function endSession(ctx: Pick<SessionContext, 'config' | 'store'>, req: Request, res: Response) {
  const id = sessionIdOf(req);
  if (id) await ctx.store.consoleSessions.end(sha256(id));
  res.append('Set-Cookie', serializeCookie(SESSION_COOKIE, '', { ...cookieOptions(ctx), maxAge: 0 }));
}

/**
 * Whether a session's key is one this process accepts: the same name with the same key (a key
 * removed from ADMIN_API_KEYS, or ADMIN_API_KEY changed, ends the sessions it opened).
 */
export function liveKeyCheck(
  ctx: Pick<SessionContext, 'secrets'>,
): (session: { actor: string; keyHash: string | null }) => boolean {
  const live = new Set(ctx.secrets.adminApiKeys.map((k) => `${k.name}\0${keyFingerprint(k.key)}`));
  return (session) => session.keyHash !== null && live.has(`${session.actor}\0${session.keyHash}`);
}

/**
 * A signed-in session or, for a page, a redirect to the sign-in page (an API call gets 401). The
 * session's last request moves to now; one idle past CONSOLE_SESSION_IDLE_SECONDS or older than
 * CONSOLE_SESSION_ABSOLUTE_SECONDS, or whose admin key is no longer configured, has ended and is
 * removed.
 */
export function requireSession(
  ctx: Pick<SessionContext, 'config' | 'store' | 'secrets'>,
  kind: 'page' | 'api',
): RequestHandler {
  const limits = sessionLimits(ctx);
  const keyIsLive = liveKeyCheck(ctx);
  return async (req, res, next) => {
    const id = sessionIdOf(req);
    let session = id ? await ctx.store.consoleSessions.use(sha256(id), new Date(), limits) : undefined;
    if (id && session && !keyIsLive(session)) {
      await ctx.store.consoleSessions.end(sha256(id));
      session = undefined;
    }
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

/**
 * A state-changing request must come from a console page: from one of the console's origins
 * (CONSOLE_ORIGIN or its default, configuration and never the request's `Host`: `Origin`, and
 * `Sec-Fetch-Site` when the browser sends it) and, once signed in, with the session's CSRF token
 * (`x-csrf-token`, or `_csrf` in a form). Anything else is 403, and logged.
 */
export function sameOrigin(ctx: Pick<SessionContext, 'log' | 'config'>): RequestHandler {
  const own = new Set(ctx.config.console.origins);
  return (req, _res, next) => {
    const origin = req.get('origin');
    const site = req.get('sec-fetch-site');
    if ((origin !== undefined && !own.has(origin)) || (site !== undefined && site !== 'same-origin')) {
      refuse(ctx, req, next, 'foreign origin');
      return;
    }
    next();
  };
}

export function requireCsrf(ctx: Pick<SessionContext, 'log'>): RequestHandler {
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

function refuse(ctx: Pick<SessionContext, 'log'>, req: Request, next: NextFunction, why: string) {
  ctx.log.warn(
    { event: 'console_refused', reason: why, method: req.method, path: req.path, origin: req.get('origin') },
    `console: ${req.method} ${req.path} refused (${why})`,
  );
  next(new AppError('FORBIDDEN', `console: ${why}`));
}
