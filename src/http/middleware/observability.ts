import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Request, RequestHandler } from 'express';
import { AppError, ERROR_STATUS, type ErrorCode } from '../../errors.js';
import type { Logger } from '../../model.js';
import type { Lifecycle } from '../../observability/lifecycle.js';
import { requestLineLogger } from '../../observability/logger.js';
import type { IssuerMetrics } from '../../observability/metrics.js';
import { REQUEST_ID, runWithRequestId } from '../../request-context.js';

/** The route pattern a request matched (`/statuslist/:partition`), never its raw path. */
export function routeLabel(req: Request): string {
  const path: unknown = req.route?.path;
  if (typeof path === 'string') return path;
  return path === undefined ? 'unmatched' : 'cors_preflight';
}

/** Paths a draining instance still answers (the orchestrator watches them turn). */
const PROBES = new Set(['/healthz', '/readyz']);

/** The id of a request (an incoming valid `x-request-id`, else a new one), set by `requestObservability`. */
export function requestIdOf(req: Request): string | undefined {
  return (req as RequestWithId)[REQUEST_ID_KEY];
}

const REQUEST_ID_KEY = Symbol('requestId');
type RequestWithId = Request & { [REQUEST_ID_KEY]?: string };

/**
 * The first steps of every request: its id (an incoming valid `x-request-id`, else a new one,
 * echoed), one log line when it ends, its metrics, and the drain guard.
 *
 * The line is written by `requestLineLogger` (no redaction pass) and carries only method, route
 * pattern, status, time and id: headers, bodies and query strings (which may hold an email) stay
 * out. One listener per request does the line, the metrics and the in-flight count; no child
 * logger is made per request.
 */
export function requestObservability(
  log: Logger,
  metrics: IssuerMetrics,
  lifecycle: Lifecycle,
): RequestHandler[] {
  const lines = requestLineLogger(log);
  const observe: RequestHandler = (req, res, next) => {
    const started = performance.now();
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    (req as RequestWithId)[REQUEST_ID_KEY] = id;
    res.setHeader('x-request-id', id);
    lifecycle.requestStarted();
    const interruptible = lifecycle.onInterrupt(() => interrupt(res));
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      interruptible();
      lifecycle.requestEnded();
      const ms = performance.now() - started;
      const route = routeLabel(req);
      const status = res.statusCode;
      const entry = { reqId: id, method: req.method, route, status, responseTime: Math.round(ms) };
      if (status >= 500) lines.error(entry, 'request failed');
      else lines.info(entry, 'request completed');
      metrics.observeRequest(route, req.method, status, ms / 1000);
    };
    // 'finish' when the answer was handed to the socket; 'close' alone when the client went away.
    res.once('finish', end);
    res.once('close', end);
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

  return [observe, drainGuard];
}

/**
 * The shutdown grace ran out with this request unfinished: it is answered 503 (what it recorded
 * stays recorded; an issuance's upload stays in the outbox) instead of having its connection
 * reset. Whatever its handler writes later is dropped. Resolves once the answer is handed to the
 * socket, so closing the connections next does not cut it.
 */
function interrupt(res: ServerResponse): Promise<void> {
  if (res.writableEnded) return Promise.resolve();
  if (res.headersSent) {
    res.destroy();
    return Promise.resolve();
  }
  const body = JSON.stringify({
    code: 'UNAVAILABLE' satisfies ErrorCode,
    message: 'shutting down before the request finished; retry it (anything it recorded is kept)',
  });
  const finished = new Promise<void>((resolve) => {
    res.once('finish', resolve);
    res.once('close', resolve);
  });
  res.writeHead(ERROR_STATUS.UNAVAILABLE, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
    'retry-after': '1',
  });
  res.end(body);
  // The handler may still try to answer: those writes go nowhere, and the status logged and
  // counted stays the 503 that was sent.
  Object.defineProperty(res, 'statusCode', { get: () => ERROR_STATUS.UNAVAILABLE, set: () => {} });
  res.writeHead = (() => res) as typeof res.writeHead;
  res.setHeader = (() => res) as typeof res.setHeader;
  res.write = (() => true) as typeof res.write;
  res.end = (() => res) as typeof res.end;
  return finished;
}

/** Runs the rest of the request (its handler and everything it awaits) under the request's id. */
export const requestScope: RequestHandler = (req, _res, next) => {
  runWithRequestId(requestIdOf(req) ?? randomUUID(), next);
};
