import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, ProtocolError } from '../../errors.js';
import type { Logger } from '../../model.js';
import { DatabaseUnavailableError, databaseUnavailable } from '../../store/database-unavailable.js';
import { requestIdOf, routeLabel } from './observability.js';

/**
 * Unknown routes → 404 JSON (docs/interface.md "errors"). `absentBecause` names why a path the kit
 * can serve is absent from this configuration (the setting that enables it), so the 404 says how
 * to get it instead of only "no route".
 */
export function notFound(absentBecause?: (path: string) => string | undefined): RequestHandler {
  return (req, _res, next) => {
    const why = absentBecause?.(req.path);
    next(new AppError('NOT_FOUND', `no route ${req.method} ${req.path}${why ? `: ${why}` : ''}`));
  };
}

/**
 * The one place that writes error responses (docs/interface.md "errors"): `{ code, message, details? }`.
 * A 5xx never leaks internals; body-parser errors map to 400/413.
 */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (err instanceof ProtocolError && !res.headersSent) {
      // OpenID4VCI and OAuth answers: the specifications' shape, never cached (RFC 6749 §5.2).
      if (err.wwwAuthenticate) res.set('WWW-Authenticate', err.wwwAuthenticate);
      if (err.headers) res.set(err.headers);
      res.set('Cache-Control', 'no-store');
      res.status(err.status).json({ error: err.error, error_description: err.description });
      return;
    }
    const error = toAppError(err);
    if (error.cause instanceof DatabaseUnavailableError) {
      // The cause names the server's address: the log has it, the answer does not.
      log.warn(
        { event: 'database_unavailable', reqId: requestIdOf(req), route: routeLabel(req), err: error.cause },
        'request failed: the database is unavailable',
      );
    } else if (error.status >= 500 && error.code !== 'UPSTREAM_UNAVAILABLE') {
      log.error(
        { event: 'request_failed', reqId: requestIdOf(req), route: routeLabel(req), err },
        'request failed',
      );
    } else if (error.code === 'FORBIDDEN') {
      // The reason names the header, never its value.
      log.warn(
        { event: 'auth_failed', reqId: requestIdOf(req), route: routeLabel(req), reason: error.message },
        'request refused',
      );
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    const body: Record<string, unknown> = {
      code: error.code,
      message: error.expose ? error.message : 'internal error',
    };
    if (error.expose && error.details !== undefined) body.details = error.details;
    res.status(error.status).json(body);
  };
}

function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  // docs/operations.md "Database unreachable": 503 naming the database, whatever the engine.
  const down = databaseUnavailable(err);
  if (down)
    return new AppError(
      'UNAVAILABLE',
      `the ${down.engine} database is unavailable; try again later`,
      undefined,
      {
        cause: down,
      },
    );
  const e = err as { type?: string; status?: number; expose?: boolean };
  if (e?.type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE', 'request body is too large');
  if (e?.type === 'entity.parse.failed')
    return new AppError('INVALID_PARAMETER', 'body: malformed JSON', { field: 'body' });
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      e.type === 'charset.unsupported' ? 'unsupported body charset' : 'unsupported body encoding',
    );
  }
  // Express's own 4xx errors, e.g. a path parameter that is not valid percent-encoding (URIError).
  if (err instanceof URIError)
    return new AppError('INVALID_PARAMETER', 'path: malformed percent-encoding', { field: 'path' });
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    return AppError.fromUpstream(
      e.status,
      'INVALID_PARAMETER',
      e.expose ? (err as Error).message : 'invalid request',
    );
  }
  return new AppError('INTERNAL', 'internal error');
}
