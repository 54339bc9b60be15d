import type { RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit, type Store } from 'express-rate-limit';
import { AppError } from '../../errors.js';
import type { RouteGroup } from '../../model.js';

/**
 * Per client IP and route group; 0 turns a group off. The store is the library's Store
 * interface: pass a shared one (Redis, …) when several instances run behind one address.
 * `counter` names a limit kept in its group's store beside the group's own (its keys are
 * `<counter>:<ip>`); with `failuresOnly` only answers of 400 and above count (sign-in attempts).
 */
export function rateLimiter(
  group: RouteGroup,
  perMinute: number,
  store?: Store,
  onLimited?: () => void,
  options: { counter?: string; failuresOnly?: boolean; message?: string } = {},
): RequestHandler {
  if (perMinute === 0) return (_req, _res, next) => next();
  const { counter } = options;
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    identifier: counter ?? group,
    ...(store ? { store } : {}),
    ...(counter ? { keyGenerator: (req) => `${counter}:${ipKeyGenerator(req.ip ?? '')}` } : {}),
    ...(options.failuresOnly ? { skipSuccessfulRequests: true } : {}),
    handler: (_req, _res, next) => {
      onLimited?.();
      next(
        new AppError(
          'RATE_LIMITED',
          options.message ?? `too many ${group} requests; retry after the RateLimit reset`,
        ),
      );
    },
  });
}
