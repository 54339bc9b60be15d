/**
 * The admin CLI's HTTP client: timeout through AbortSignal, explicit status checks, typed
 * errors. The CLI talks to the running server only through its routes.
 */
export class AdminApiError extends Error {
  override name = 'AdminApiError';
  constructor(
    /** HTTP status; 0 when the server could not be reached. */
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** From `Retry-After`, when the server sent one. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }

  /** Worth another attempt: unreachable, rate limited, upstream down, or the same key still running. */
  get transient(): boolean {
    if (this.status === 0 || this.status === 429 || this.status === 502 || this.status === 503) return true;
    if (this.status === 504) return true;
    const reason = (this.details as { reason?: unknown } | undefined)?.reason;
    return this.status === 409 && reason === 'in-progress';
  }
}

export interface CallOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Send `x-admin-api-key` (default true). */
  admin?: boolean;
}

export class AdminClient {
  constructor(
    readonly baseUrl: string,
    private readonly adminApiKey: string | undefined,
    private readonly timeoutMs = 60_000,
  ) {}

  async call<T>(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    options: CallOptions = {},
  ): Promise<{ status: number; body: T }> {
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [k, v] of Object.entries(options.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (options.admin !== false) {
      if (!this.adminApiKey) {
        throw new AdminApiError(
          0,
          'NO_ADMIN_KEY',
          'ADMIN_API_KEY is not set (environment, .env, or KEYS_DIR/dev-secrets.json in development)',
        );
      }
      headers['x-admin-api-key'] = this.adminApiKey;
    }
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      const timeout = (err as Error).name === 'TimeoutError';
      throw new AdminApiError(
        0,
        timeout ? 'TIMEOUT' : 'UNREACHABLE',
        timeout
          ? `${url.origin} did not answer within ${this.timeoutMs} ms`
          : `cannot reach ${url.origin}: ${networkCause(err)} (is the server running there? another server: --url <url> or ISSUER_URL)`,
      );
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (res.status < 200 || res.status >= 300) {
      const e = (body ?? {}) as { code?: unknown; message?: unknown; details?: unknown };
      const retryAfter = Number(res.headers.get('retry-after'));
      throw new AdminApiError(
        res.status,
        typeof e.code === 'string' ? e.code : `HTTP_${res.status}`,
        typeof e.message === 'string' ? e.message : `${method} ${path} answered ${res.status}`,
        e.details,
        Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
      );
    }
    return { status: res.status, body: body as T };
  }
}

/**
 * The real reason a fetch failed (undici wraps it as `fetch failed` with a `cause`): the errno
 * (ECONNREFUSED, ENOTFOUND, ECONNRESET) or the TLS error code, and its message.
 */
export function networkCause(err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause !== undefined) cause = cause.cause;
  if (cause instanceof AggregateError && cause.errors.length > 0) cause = cause.errors[0];
  const e = cause as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  const message = typeof e.message === 'string' ? e.message : String(cause);
  return code && !message.includes(code) ? `${code} ${message}` : message;
}
