import { hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { invalidParameter } from '../../../errors.js';
import { adminKeyMatcher } from '../../middleware/auth.js';
import { rateLimiter } from '../../middleware/rate-limit.js';
import type { Route } from '../route.js';
import { type Html, html } from './html.js';
import * as issuancePages from './issuance-pages.js';
import { type PageId, page, securityHeaders } from './layout.js';
import type { ConsolePages, DoctorItem } from './pages.js';
import * as pages from './pages.js';
import {
  CONSOLE_PATH,
  endSession,
  requireCsrf,
  requireSession,
  type SessionContext,
  sameOrigin,
  startSession,
} from './session.js';

export type { DoctorItem };

/**
 * The admin routes the console's pages call, by path: the very handlers of the route table, with
 * the signed-in name as the audit actor in place of the key's name. `reason` is required here for
 * the changes an operator must explain (docs/operations.md "The admin console").
 */
const ACTIONS: Record<string, { reasonRequired: boolean }> = {
  '/admin/revoke': { reasonRequired: true },
  '/admin/suspend': { reasonRequired: true },
  '/admin/unsuspend': { reasonRequired: true },
  '/admin/keys/rotate': { reasonRequired: true },
  '/admin/status-changes': { reasonRequired: true },
  '/admin/renew': { reasonRequired: true },
  '/admin/uploads/retry': { reasonRequired: false },
  '/admin/schemas/reload': { reasonRequired: false },
};

/**
 * Failed sign-ins counted per client address and minute; past it, a wrong key is 429 until the
 * window ends (the right key still signs in).
 */
export const SIGN_IN_FAILURES_PER_MIN = 10;

const ASSETS_DIR = new URL('./assets/', import.meta.url);
// A Map, not an object: `constructor`, `__proto__` or `toString` are no asset (404, never Object's own).
const ASSETS = new Map<string, { type: string; body: Buffer }>([
  [
    'console.js',
    { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('console.js', ASSETS_DIR)) },
  ],
  [
    'console.css',
    { type: 'text/css; charset=utf-8', body: readFileSync(new URL('console.css', ASSETS_DIR)) },
  ],
]);

/** `GET /console/assets/:name`: the console's script and style sheet. */
export const consoleAsset: RequestHandler = (req, res, next) => {
  const asset = ASSETS.get(String(req.params.name));
  if (!asset) {
    next();
    return;
  }
  res.set('Cache-Control', 'no-cache');
  res.type(asset.type).send(asset.body);
};

/** The sign-in form: the key (form-encoded; any other body has no `key` and is a 400). */
const SignInSchema = z.object({ key: z.string().min(1) });

export interface ConsoleOptions {
  /** The app's route table: the console mounts the admin handlers it calls from it. */
  routes: readonly Route[];
  /** The admin group's rate limit, shared with the admin routes. */
  adminLimit: RequestHandler;
  /** What the app puts before every handler (request scope, the pinned schema set). */
  scope: RequestHandler[];
  doctor?: (() => Promise<DoctorItem[]>) | undefined;
}

const wrap =
  (fn: (p: ConsolePages, req: Request, res: Response) => Promise<void>, p: ConsolePages): RequestHandler =>
  (req, res, next) => {
    fn(p, req, res).catch(next);
  };

/**
 * `/console` (CONSOLE=on, on the admin listener): server-rendered pages and one small script of
 * our own, signed in with an admin key into a server-side session.
 * docs/architecture.md "The admin console": reads go to the stores; every change goes through an
 * admin route's handler.
 */
export function consoleRouter(ctx: AppContext, options: ConsoleOptions): express.Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  const byPath = new Map(
    options.routes.filter((r) => r.group === 'admin' && r.method === 'post').map((r) => [r.path, r]),
  );
  const available: PageId[] = ['overview', 'issuances', 'audit', 'keys', 'schemas'];
  if (byPath.has('/admin/status-changes')) available.splice(2, 0, 'bulk');
  const p: ConsolePages = { ctx, pages: available, doctor: options.doctor };
  const session = requireSession(ctx, 'page');
  const origin = sameOrigin(ctx);
  const csrf = requireCsrf(ctx);
  const form = express.urlencoded({ extended: false, limit: '8kb' });
  const json = express.json({ limit: '64kb', type: 'application/json' });
  const matchKey = adminKeyMatcher(ctx.secrets.adminApiKeys, ctx.secrets.keysHashed);

  router.use((_req, res, next) => {
    securityHeaders(res);
    next();
  });
  router.get('/assets/:name', consoleAsset);

  router.get('/sign-in', (req, res) => signInPage(res, nextOf(req)));
  // docs/operations.md "The admin console": failed sign-ins are counted per address, and past the
  // limit a wrong key is 429; the right key is checked first, so others' failures never lock it out.
  const failedSignIns = rateLimiter(
    'admin',
    SIGN_IN_FAILURES_PER_MIN,
    ctx.rateLimitStore?.('admin'),
    undefined,
    {
      counter: 'console-sign-in',
      message: 'console: too many failed sign-ins from this address; wait a minute',
    },
  );
  router.post(
    '/sign-in',
    origin,
    form,
    signInHandler(ctx, {
      matchKey,
      failedSignIns,
      console: 'console',
      missingKey: 'required: the admin key, as a form field (application/x-www-form-urlencoded)',
      wrongKey: 'That key is not an admin key of this issuer.',
      sessionKey: (key) => (ctx.secrets.keysHashed ? hash('sha256', key, 'hex') : key),
    }),
  );
  router.post('/sign-out', origin, session, form, csrf, (req, res, next) => {
    const actor = (res.locals.console as { actor: string }).actor;
    endSession(ctx, req, res)
      .then(() => {
        ctx.log.info({ event: 'console_sign_out', actor }, `console: ${actor} signed out`);
        res.redirect(303, `${CONSOLE_PATH}/sign-in`);
      })
      .catch(next);
  });

  router.get('/', session, wrap(pages.overview, p));
  router.get('/doctor', session, wrap(pages.doctorFragment, p));
  router.get('/issuances', session, wrap(issuancePages.issuances, p));
  router.get('/issuances.csv', session, wrap(issuancePages.issuancesCsv, p));
  router.get('/credentials/:credentialId', session, wrap(issuancePages.credential, p));
  router.get('/audit', session, wrap(pages.audit, p));
  router.get('/keys', session, wrap(pages.keys, p));
  router.get('/schemas', session, wrap(pages.schemas, p));
  if (available.includes('bulk')) router.get('/bulk', session, wrap(pages.bulk, p));

  // The admin API under the console's session: same handler, same validation, same audit row.
  const apiSession = requireSession(ctx, 'api');
  // The bulk job's progress, read by the Bulk page while the job runs.
  const job = options.routes.find((r) => r.method === 'get' && r.path === '/admin/status-changes/:jobId');
  if (job)
    router.get(
      '/api/admin/status-changes/:jobId',
      options.adminLimit,
      apiSession,
      ...options.scope,
      job.handler,
    );
  for (const [path, action] of Object.entries(ACTIONS)) {
    const route = byPath.get(path);
    if (!route) continue;
    router.post(
      `/api${path}`,
      options.adminLimit,
      origin,
      apiSession,
      json,
      csrf,
      requireReason(action.reasonRequired),
      ...options.scope,
      route.handler,
    );
  }
  return router;
}

function requireReason(required: boolean): RequestHandler {
  return (req, _res, next: NextFunction) => {
    const body = req.body as Record<string, unknown> | undefined;
    if (body && typeof body === 'object') delete body._csrf;
    if (required && (typeof body?.reason !== 'string' || body.reason.trim() === '')) {
      next(invalidParameter('reason', 'required in the console: say why'));
      return;
    }
    next();
  };
}

/** What differs between the admin console's sign-in and the operator console's. */
export interface SignInOptions {
  /** The signed-in name of a key, or undefined for a key that is none of ours (constant time). */
  matchKey: (key: string) => string | undefined;
  /** Counts a failed sign-in for the address, answering 429 past the limit. */
  failedSignIns: RequestHandler;
  /** Which console, in log lines (`console`, `operator console`). */
  console: string;
  /** Extra fields of its log lines. */
  logFields?: Record<string, unknown>;
  /** The 400's message when the form has no key. */
  missingKey: string;
  /** The sign-in page's message for a wrong key (403). */
  wrongKey: string;
  as?: SignInAs;
  /** What the session records of the key (hashed where the keys are kept hashed). */
  sessionKey?: (key: string) => string;
}

/**
 * `POST /console/sign-in` (docs/operations.md "The admin console"): a key from the form starts a
 * session and goes to `next`; a wrong one counts against the address (429 past the limit) and is
 * logged with the address, never the key.
 */
export function signInHandler(
  ctx: Pick<SessionContext, 'config' | 'store' | 'log'>,
  o: SignInOptions,
): RequestHandler {
  return (req, res, next) => {
    const parsed = SignInSchema.safeParse(req.body ?? {});
    if (!parsed.success) {
      next(invalidParameter('key', o.missingKey));
      return;
    }
    const actor = o.matchKey(parsed.data.key);
    if (actor === undefined) {
      o.failedSignIns(req, res, (err?: unknown) => {
        if (err) {
          next(err);
          return;
        }
        ctx.log.warn(
          { event: 'console_sign_in_failed', ip: req.ip, ...o.logFields },
          `${o.console}: failed sign-in from ${req.ip ?? 'unknown'}`,
        );
        signInPage(res, nextOf(req), o.wrongKey, 403, o.as);
      });
      return;
    }
    startSession(ctx, res, actor, o.sessionKey ? o.sessionKey(parsed.data.key) : parsed.data.key)
      .then(() => {
        ctx.log.info(
          { event: 'console_sign_in', actor, ip: req.ip, ...o.logFields },
          `${o.console}: ${actor} signed in`,
        );
        res.redirect(303, nextOf(req) ?? CONSOLE_PATH);
      })
      .catch(next);
  };
}

/** Where to go after signing in: a console path only, never another site. */
export function nextOf(req: Request): string | undefined {
  const raw = (req.query.next ?? (req.body as Record<string, unknown> | undefined)?.next) as unknown;
  return typeof raw === 'string' && /^\/console(\/[^/\\]|$|\?)/.test(raw) && !raw.includes('//')
    ? raw
    : undefined;
}

/** Who signs in on a sign-in page: the key's label and what it is. */
export interface SignInAs {
  label: string;
  hint: Html;
}

const ADMIN_SIGN_IN: SignInAs = {
  label: 'Admin key',
  hint: html`An admin key of this issuer (<code>ADMIN_API_KEY</code> signs in as <code>admin</code>, each <code>ADMIN_API_KEYS</code> entry as its name). The key is checked once; the browser keeps only a session cookie.`,
};

export function signInPage(
  res: Response,
  next: string | undefined,
  error?: string,
  status = 200,
  as: SignInAs = ADMIN_SIGN_IN,
): void {
  page(res, {
    title: 'Sign in',
    current: 'overview',
    pages: [],
    status,
    body: html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="/console/sign-in${next ? `?next=${encodeURIComponent(next)}` : ''}" class="signin">
<label for="key">${as.label}</label>
<input id="key" name="key" type="password" autocomplete="current-password" required autofocus>
<p class="hint">${as.hint}</p>
<button type="submit">Sign in</button>
</form>`,
  });
}
