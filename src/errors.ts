/**
 * The one error type of the kit (docs/interface.md "Errors"). Handlers and services throw it; only the HTTP error
 * handler turns it into a response. A code fixes its status (`ERROR_STATUS`); `expose` is false
 * for 5xx other than the two "unavailable" codes, so internals never leak.
 */
export const ERROR_STATUS = {
  INVALID_PARAMETER: 400,
  /** Only when passing on a hosting-service 401 (docs/interface.md "admin issue-vc"); the issuer's own key checks answer 403. */
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  /** A body in a content-encoding or charset the server does not read (the JSON body parser's 415). */
  UNSUPPORTED_MEDIA_TYPE: 415,
  CLAIMS_INVALID: 422,
  /** A schema reload found bad files; the previous schema set is still served. */
  SCHEMAS_INVALID: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UPSTREAM_UNAVAILABLE: 502,
  /**
   * Not now, try again: the server is still starting (`src/server.ts` answers it before the app is
   * attached) or draining, or the database cannot answer (docs/operations.md "Database unreachable").
   */
  UNAVAILABLE: 503,
  /**
   * The tenant this host belongs to is disabled by the deployment operator (docs/several-issuers.md):
   * its issuance and admin writes stop; its public routes keep serving.
   */
  TENANT_DISABLED: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: unknown;
  readonly expose: boolean;

  constructor(
    code: ErrorCode,
    message: string,
    details?: unknown,
    options?: { cause?: unknown /** Only through `fromUpstream`. */; status?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = options?.status ?? ERROR_STATUS[code];
    this.details = details;
    // Both 5xx codes say who is unavailable in words written for the caller, never a raw error.
    this.expose =
      this.status < 500 ||
      code === 'UPSTREAM_UNAVAILABLE' ||
      code === 'UNAVAILABLE' ||
      code === 'TENANT_DISABLED';
  }

  /**
   * Passes on a 4xx status another party chose, where the table would say otherwise: the hosting
   * service's final answer (docs/interface.md "admin issue-vc": 400/401/403/404/409 with its message), or the
   * body parser's in front of the handlers (415 and its other 4xx).
   */
  static fromUpstream(status: number, code: ErrorCode, message: string, details?: unknown): AppError {
    if (!Number.isInteger(status) || status < 400 || status > 499)
      throw new RangeError(`only a 4xx status is passed on, got ${status}`);
    return new AppError(code, message, details, { status });
  }
}

export const invalidParameter = (field: string, message: string): AppError =>
  new AppError('INVALID_PARAMETER', `${field}: ${message}`, { field });

export const notFound = (message: string): AppError => new AppError('NOT_FOUND', message);

export const upstreamUnavailable = (message: string, details?: unknown, cause?: unknown): AppError =>
  new AppError('UPSTREAM_UNAVAILABLE', message, details, { cause });

/**
 * An OAuth 2.0 or OpenID4VCI protocol error, answered in the shape those specifications give it
 * (`{ error, error_description }`: RFC 6749 §5.2, RFC 6750 §3.1, OpenID4VCI 1.0 §8.3.1.2) rather
 * than as `{ code, message }`, because the wallets that call the OpenID4VCI channel read that shape.
 */
export class ProtocolError extends Error {
  constructor(
    /** 400, or 401 for a missing or bad access token (RFC 6750 §3.1). */
    readonly status: 400 | 401,
    readonly error: string,
    readonly description: string,
    /** RFC 6750 §3 / RFC 9449 §7.1: the challenge a 401 carries. */
    readonly wwwAuthenticate?: string,
    /** Other response headers the answer carries (RFC 9449 §8: `DPoP-Nonce`). */
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(description);
    this.name = 'ProtocolError';
  }
}
