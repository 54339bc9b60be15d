import { hash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { AppError } from '../../errors.js';

// One-shot crypto.hash: a third of createHash().update().digest()'s CPU, on every keyed request.
const digest = (s: string) => hash('sha256', s, 'buffer');
/**
 * A configured key as its digest: `hashed` keys are kept as their hex SHA-256 only (a tenant's
 * keys in the registry, docs/several-issuers.md), the others as given.
 */
const digestOf = (key: string, hashed: boolean) => (hashed ? Buffer.from(key, 'hex') : digest(key));

/**
 * A missing or wrong key is 403, not 401 (docs/interface.md "authentication"). Hashing both sides
 * first makes the comparison constant-time whatever the lengths.
 */
export function requireKey(
  header: 'x-api-key' | 'x-admin-api-key' | 'x-operator-api-key',
  expected: string,
  hashed = false,
): RequestHandler {
  const want = digestOf(expected, hashed);
  return (req, _res, next) => {
    const got = req.get(header);
    if (typeof got !== 'string' || got.length === 0 || !timingSafeEqual(digest(got), want)) {
      next(new AppError('FORBIDDEN', `missing or wrong ${header}`));
      return;
    }
    next();
  };
}

/**
 * The name of the admin key `got` is (ADMIN_API_KEY as `admin`, ADMIN_API_KEYS), or undefined:
 * every key is compared (no early exit, so the time does not tell which name matched or how many
 * there are). Shared by the `x-admin-api-key` check and the console's sign-in.
 */
export function adminKeyMatcher(
  keys: ReadonlyArray<{ name: string; key: string }>,
  hashed = false,
): (got: unknown) => string | undefined {
  const wants = keys.map((k) => ({ name: k.name, digest: digestOf(k.key, hashed) }));
  return (got) => {
    let actor: string | undefined;
    if (typeof got === 'string' && got.length > 0) {
      const have = digest(got);
      for (const want of wants)
        if (timingSafeEqual(have, want.digest) && actor === undefined) actor = want.name;
    }
    return actor;
  };
}

/**
 * The admin key check with named keys: the matching key's name becomes `res.locals.actor`, the
 * actor of the audit log.
 */
export function requireAdminKey(
  keys: ReadonlyArray<{ name: string; key: string }>,
  hashed = false,
): RequestHandler {
  const match = adminKeyMatcher(keys, hashed);
  return (req, res, next) => {
    const actor = match(req.get('x-admin-api-key'));
    if (actor === undefined) {
      next(new AppError('FORBIDDEN', 'missing or wrong x-admin-api-key'));
      return;
    }
    res.locals.actor = actor;
    next();
  };
}

/**
 * Admin routes are for the issuer's own servers: a browser request (it carries Origin, or
 * Sec-Fetch-Site: cross-site) is refused before the key is even looked at.
 */
export const refuseBrowsers: RequestHandler = (req, _res, next) => {
  if (req.get('origin') !== undefined || req.get('sec-fetch-site') === 'cross-site') {
    next(new AppError('FORBIDDEN', 'admin routes are not callable from a browser'));
    return;
  }
  next();
};

/** Public routes are read by wallets and verifiers anywhere, browsers included. */
export const openCors: RequestHandler = (_req, res, next) => {
  res.set('Access-Control-Allow-Origin', '*');
  res.set('Access-Control-Allow-Methods', 'GET, OPTIONS');
  res.set('Access-Control-Allow-Headers', 'If-None-Match');
  res.set('Access-Control-Expose-Headers', 'ETag, RateLimit, RateLimit-Policy');
  next();
};

/**
 * `Authorization: Bearer <token>` when a token is set (METRICS_TOKEN); open when it is not. A
 * missing or wrong token is 401 with `WWW-Authenticate` (RFC 6750 §3).
 */
export function requireBearer(token: string | undefined, realm: string): RequestHandler {
  if (token === undefined) return (_req, _res, next) => next();
  const want = digest(token);
  return (req, res, next) => {
    // RFC 9110 §11.1: the auth scheme is case-insensitive (`bearer`, `BEARER`).
    const got = /^bearer +(\S+) *$/i.exec(req.get('authorization') ?? '')?.[1];
    if (got === undefined || !timingSafeEqual(digest(got), want)) {
      res.set('www-authenticate', `Bearer realm="${realm}"`);
      next(new AppError('UNAUTHORIZED', `${realm}: missing or wrong bearer token`));
      return;
    }
    next();
  };
}
