/**
 * The one error type of the kit (DESIGN §10). Handlers and services throw it; only the HTTP error
 * handler turns it into a response. `expose` is false for 5xx so internals never leak.
 */
export type ErrorCode =
  | 'INVALID_PARAMETER'
  /** Only when passing on a hosting-service 401 (spec 4.6 admin issue-vc); the issuer's own key checks answer 403. */
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'CLAIMS_INVALID'
  | 'RATE_LIMITED'
  | 'UPSTREAM_UNAVAILABLE'
  | 'INTERNAL';

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: unknown;
  readonly expose: boolean;

  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    details?: unknown,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.expose = status < 500 || code === 'UPSTREAM_UNAVAILABLE';
  }
}

export const invalidParameter = (field: string, message: string): AppError =>
  new AppError(400, 'INVALID_PARAMETER', `${field}: ${message}`, { field });

export const notFound = (message: string): AppError => new AppError(404, 'NOT_FOUND', message);

export const upstreamUnavailable = (message: string, details?: unknown, cause?: unknown): AppError =>
  new AppError(502, 'UPSTREAM_UNAVAILABLE', message, details, { cause });
