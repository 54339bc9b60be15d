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
 * A tenant's context calls through the deployment's `SharedHttpPools` instead, still holding its
 * own calls to MAX_CONNECTIONS in flight per origin.
 */
export class HttpPools {
  // Parsed request targets by URL: the few upstream URLs are parsed once, not per request.
  private readonly targets = new Map<string, Target>();
  private readonly pools = new Map<string, Pool>();
  /** With shared pools: this context's calls in flight (what `destroy` aborts), and its gates by origin. */
  private readonly inFlight = new Set<Deadline>();
  private readonly gates = new Map<string, Gate>();

  constructor(private readonly shared?: SharedHttpPools) {}

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
    const timer = setTimeout(
      () => abort(deadline, new HttpFailure('timeout', `timed out after ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    const gate = target.gate;
    let entered = false;
    try {
      if (gate) {
        this.inFlight.add(deadline);
        await enter(gate, deadline);
        entered = true;
      }
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
      if (gate) {
        this.inFlight.delete(deadline);
        if (entered) leave(gate);
      }
    }
  }

  /** Closes every pool (idle sockets at once, busy ones once their answer is read); a later call opens a new one. */
  async close(): Promise<void> {
    // Shared pools are the deployment's to close; calls in flight finish on them.
    this.gates.clear();
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
    for (const deadline of [...this.inFlight])
      abort(deadline, new HttpFailure('network', 'aborted: shutting down'));
    this.gates.clear();
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
      let pool = this.shared?.pool(u.origin) ?? this.pools.get(u.origin);
      if (!pool) {
        pool = new Pool(u.origin, {
          connections: MAX_CONNECTIONS,
          pipelining: 1,
          maxResponseSize: MAX_RESPONSE_BYTES,
        });
        this.pools.set(u.origin, pool);
      }
      let gate: Gate | undefined;
      if (this.shared) {
        gate = this.gates.get(u.origin);
        if (!gate) {
          gate = { running: 0, waiting: [] };
          this.gates.set(u.origin, gate);
        }
      }
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json',
      };
      if (u.username || u.password) {
        const auth = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
        headers.authorization = `Basic ${Buffer.from(auth).toString('base64')}`;
      }
      target = { pool, path: `${u.pathname}${u.search}`, headers, gate };
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
  /** On shared pools: this context's share of the origin's connections. */
  gate: Gate | undefined;
}

/**
 * Keep-alive pools by origin for every context of the process that calls through them: the tenants
 * of a deployment (docs/several-issuers.md "Idle tenants"), which mostly call the same hosting service
 * and claims sources, reuse one set of warm connections instead of each keeping its own, cold for a
 * tenant called once every few seconds. A pool opens as many connections as its callers' calls in
 * flight need: each context's `HttpPools` holds its own to MAX_CONNECTIONS per origin, so a tenant
 * whose upstream hangs fills its own share, not another tenant's. Closed by their owner.
 */
export class SharedHttpPools {
  private readonly pools = new Map<string, Pool>();

  pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, { connections: null, pipelining: 1, maxResponseSize: MAX_RESPONSE_BYTES });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    const open = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(open.map((pool) => pool.close()));
  }
}

/** One context's calls to one origin on shared pools: at most MAX_CONNECTIONS run, the rest wait in order. */
interface Gate {
  running: number;
  waiting: Deadline[];
}

/** Waits for a place under `gate`'s limit, or until `deadline` aborts (the call's timeout covers the wait). */
function enter(gate: Gate, deadline: Deadline): Promise<void> | undefined {
  if (gate.running < MAX_CONNECTIONS && gate.waiting.length === 0) {
    gate.running++;
    return undefined;
  }
  return new Promise<void>((resolve, reject) => {
    deadline.admit = () => {
      deadline.off('abort', onAbort);
      deadline.admit = undefined;
      gate.running++;
      resolve();
    };
    const onAbort = () => {
      const at = gate.waiting.indexOf(deadline);
      if (at >= 0) gate.waiting.splice(at, 1);
      reject(deadline.reason);
    };
    deadline.once('abort', onAbort);
    gate.waiting.push(deadline);
  });
}

function leave(gate: Gate): void {
  gate.running--;
  gate.waiting.shift()?.admit?.();
}

function abort(deadline: Deadline, reason: HttpFailure): void {
  if (deadline.aborted) return;
  deadline.reason = reason;
  deadline.aborted = true;
  deadline.emit('abort');
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
type Deadline = EventEmitter & {
  aborted?: boolean;
  reason?: HttpFailure;
  /** Set while the call waits under its gate: lets it run. */
  admit?: (() => void) | undefined;
};

function failure(err: unknown): unknown {
  if (err instanceof HttpFailure) return err;
  // A header that would inject a line, or a bad URL: the caller's mistake, not the network's.
  if (err instanceof errors.InvalidArgumentError) return err;
  if (err instanceof errors.ResponseExceededMaxSizeError)
    return new HttpFailure('network', 'response too large', { cause: err });
  return new HttpFailure('network', 'unreachable', { cause: err });
}
