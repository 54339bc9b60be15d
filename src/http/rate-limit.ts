import type { RequestHandler } from 'express';
import { rateLimit, type Store } from 'express-rate-limit';
import { AppError } from '../errors.js';

export type RouteGroup = 'holder' | 'admin' | 'public';

/**
 * Per client IP and route group; 0 turns a group off. The store is the library's Store
 * interface: pass a shared one (Redis, …) when several instances run behind one address.
 */
export function rateLimiter(group: RouteGroup, perMinute: number, store?: Store): RequestHandler {
  if (perMinute === 0) return (_req, _res, next) => next();
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    identifier: group,
    ...(store ? { store } : {}),
    handler: (_req, _res, next) => {
      next(new AppError(429, 'RATE_LIMITED', `too many ${group} requests; retry after the RateLimit reset`));
    },
  });
}
