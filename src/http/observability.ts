import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { pinoHttp } from 'pino-http';
import { AppError } from '../errors.js';
import type { Logger } from '../model.js';
import type { Lifecycle } from '../observability/lifecycle.js';
import type { IssuerMetrics } from '../observability/metrics.js';
import { REQUEST_ID, runWithRequestId } from '../observability/request-context.js';

/** The route pattern a request matched (`/statuslist/:partition`), never its raw path. */
export function routeLabel(req: Request): string {
  const path: unknown = req.route?.path;
  if (typeof path === 'string') return path;
  return path === undefined ? 'unmatched' : 'cors_preflight';
}

/** Paths a draining instance still answers (the orchestrator watches them turn). */
const PROBES = new Set(['/healthz', '/readyz']);

/**
 * The first steps of every request: its id (an incoming valid `x-request-id`, else a new one,
 * echoed), one log line when it ends, its metrics, and the drain guard.
 */
export function requestObservability(
  log: Logger,
  metrics: IssuerMetrics,
  lifecycle: Lifecycle,
): RequestHandler[] {
  const httpLog = pinoHttp({
    logger: log,
    quietReqLogger: true,
    quietResLogger: true,
    genReqId: (req, res) => {
      const incoming = req.headers['x-request-id'];
      const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
      res.setHeader('x-request-id', id);
      return id;
    },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
    customSuccessMessage: () => 'request completed',
    customErrorMessage: () => 'request failed',
    // Only these fields: headers, bodies and query strings (which may hold an email) stay out.
    customSuccessObject: (req, res, val: { responseTime: number }) => ({
      method: req.method,
      route: routeLabel(req as Request),
      status: res.statusCode,
      responseTime: val.responseTime,
    }),
    customErrorObject: (req, res, _err, val: { responseTime: number }) => ({
      method: req.method,
      route: routeLabel(req as Request),
      status: res.statusCode,
      responseTime: val.responseTime,
    }),
  });

  const measure: RequestHandler = (req, res, next) => {
    const end = metrics.httpDuration.startTimer();
    lifecycle.requestStarted();
    res.once('close', () => {
      lifecycle.requestEnded();
      const route = routeLabel(req);
      end({ route, method: req.method });
      metrics.httpRequests.inc({ route, method: req.method, status: String(res.statusCode) });
    });
    next();
  };

  const drainGuard: RequestHandler = (req, res, next) => {
    if (!lifecycle.draining || PROBES.has(req.path)) {
      next();
      return;
    }
    res.set('connection', 'close');
    res.set('retry-after', '1');
    next(new AppError('UNAVAILABLE', 'shutting down; retry on another instance'));
  };

  return [httpLog, measure, drainGuard];
}

/** Runs the rest of the request (its handler and everything it awaits) under the request's id. */
export const requestScope: RequestHandler = (req, _res, next) => {
  runWithRequestId(String(req.id), next);
};
