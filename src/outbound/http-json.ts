import { EventEmitter } from 'node:events';
import { errors, Pool } from 'undici';

export interface JsonResponse {
  status: number;
  /** Parsed JSON, or undefined for an empty or non-JSON body. */
  body: unknown;
}

export class HttpFailure extends Error {
  override name = 'HttpFailure';
  constructor(
    readonly kind: 'timeout' | 'network',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

// Answers larger than this are not ours to read (a misrouted request, a hostile upstream).
const MAX_RESPONSE_BYTES = 1024 * 1024;
// Connections per upstream origin; further requests wait for one to be free.
const MAX_CONNECTIONS = 64;

/**
 * JSON over HTTP/1.1 through undici (Node's own fetch engine), one keep-alive `Pool` per origin.
 * Every hosted issuance makes two upstream calls (claims, upload), so the per-call work is kept
 * small: undici's `Pool.request` costs about 60% of the CPU of a node:http request (agent,
 * ClientRequest, header map), and `fetch()` far more. The target URL is parsed once, the deadline
 * is one timer covering connect, head and body, and callers check the status.
 *
 * undici reads every framing (content-length, chunked, until close), skips 1xx heads, honours
 * `connection: close` and `keep-alive: timeout=N`, refuses header names and values that would
 * inject a line, and stops reading past `maxResponseSize`. https uses node's default trust
 * (system roots and NODE_EXTRA_CA_CERTS) with the host as SNI name. Idle sockets are unref'd by
 * undici, so the pools never hold the process open.
 *
 * The context makes one and hands it to what calls out (the hosting-service client, `http`
 * claims providers); `close` ends them with the context, `destroy` when a drain runs out of time.
 */
export class HttpPools {
  // Parsed request targets by URL: the few upstream URLs are parsed once, not per request.
  private readonly targets = new Map<string, Target>();
  private readonly pools = new Map<string, Pool>();

  async post(
    url: string,
    payload: unknown,
    options: { headers?: Record<string, string>; timeoutMs: number; serialized?: boolean },
  ): Promise<JsonResponse> {
    const target = this.targetFor(url);
    const body = options.serialized ? (payload as string) : JSON.stringify(payload);
    const headers = options.headers ? { ...target.headers, ...options.headers } : target.headers;
    // undici takes an EventEmitter as abort signal: a fraction of an AbortController's cost (an
    // AbortController per call added about 20 µs of CPU, a quarter of the call).
    const deadline: Deadline = new EventEmitter();
    const timer = setTimeout(() => {
      deadline.reason = new HttpFailure('timeout', `timed out after ${options.timeoutMs} ms`);
      deadline.aborted = true;
      deadline.emit('abort');
    }, options.timeoutMs);
    try {
      const res = await target.pool.request({
        path: target.path,
        method: 'POST',
        headers,
        body,
        signal: deadline,
      });
      // undici counts body bytes against maxResponseSize as they come; a declared length is
      // refused before any are read.
      if (Number(res.headers['content-length']) > MAX_RESPONSE_BYTES) {
        res.body.destroy();
        throw new HttpFailure('network', 'response too large');
      }
      const text = await res.body.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: res.statusCode, body: parsed };
    } catch (err) {
      throw failure(err);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes every pool (idle sockets at once, busy ones once their answer is read); a later call opens a new one. */
  async close(): Promise<void> {
    const open = [...this.pools.values()];
    this.pools.clear();
    this.targets.clear();
    await Promise.all(open.map((pool) => pool.close()));
  }

  /**
   * Aborts every outbound call in flight and closes every pool at once: the shutdown grace ran
   * out, and an upstream that hangs must not hold the process past it. The aborted calls fail as
   * network errors, so an upload stays pending in the outbox.
   */
  async destroy(): Promise<void> {
    const open = [...this.pools.values()];
    this.pools.clear();
    this.targets.clear();
    await Promise.allSettled(
      open.map((pool) => pool.destroy(new HttpFailure('network', 'aborted: shutting down'))),
    );
  }

  private targetFor(url: string): Target {
    let target = this.targets.get(url);
    if (!target) {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:')
        throw new TypeError(`not an http(s) URL: ${url}`);
      let pool = this.pools.get(u.origin);
      if (!pool) {
        pool = new Pool(u.origin, {
          connections: MAX_CONNECTIONS,
          pipelining: 1,
          maxResponseSize: MAX_RESPONSE_BYTES,
        });
        this.pools.set(u.origin, pool);
      }
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json',
      };
      if (u.username || u.password) {
        const auth = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
        headers.authorization = `Basic ${Buffer.from(auth).toString('base64')}`;
      }
      target = { pool, path: `${u.pathname}${u.search}`, headers };
      if (this.targets.size >= 64) this.targets.clear();
      this.targets.set(url, target);
    }
    return target;
  }
}

/** What a caller needs of the pools: one JSON POST. */
export type PostJson = HttpPools['post'];

interface Target {
  pool: Pool;
  path: string;
  /** The fixed headers of every request to this URL. */
  headers: Record<string, string>;
}

// The pools of callers outside a context: the admin CLI's doctor, and tests.
const standalone = new HttpPools();

/** `HttpPools.post` on pools of the process's own (the CLI; outside a context). */
export function postJson(
  url: string,
  payload: unknown,
  options: { headers?: Record<string, string>; timeoutMs: number; serialized?: boolean },
): Promise<JsonResponse> {
  return standalone.post(url, payload, options);
}

/** Closes the pools `postJson` opened. */
export async function closeHttpPools(): Promise<void> {
  await standalone.close();
}

/** What undici reads of an EventEmitter given as `signal`. */
type Deadline = EventEmitter & { aborted?: boolean; reason?: HttpFailure };

function failure(err: unknown): unknown {
  if (err instanceof HttpFailure) return err;
  // A header that would inject a line, or a bad URL: the caller's mistake, not the network's.
  if (err instanceof errors.InvalidArgumentError) return err;
  if (err instanceof errors.ResponseExceededMaxSizeError)
    return new HttpFailure('network', 'response too large', { cause: err });
  return new HttpFailure('network', 'unreachable', { cause: err });
}
