import type { RequestHandler } from 'express';
import { rateLimit, type Store } from 'express-rate-limit';
import { AppError } from '../../errors.js';
import type { RouteGroup } from '../../model.js';

/**
 * Per client IP and route group; 0 turns a group off. The store is the library's Store
 * interface: pass a shared one (Redis, …) when several instances run behind one address.
 */
export function rateLimiter(
  group: RouteGroup,
  perMinute: number,
  store?: Store,
  onLimited?: () => void,
): RequestHandler {
  if (perMinute === 0) return (_req, _res, next) => next();
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    identifier: group,
    ...(store ? { store } : {}),
    handler: (_req, _res, next) => {
      onLimited?.();
      next(new AppError('RATE_LIMITED', `too many ${group} requests; retry after the RateLimit reset`));
    },
  });
}
