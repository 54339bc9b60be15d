import type { ClientRateLimitInfo, IncrementResponse, Options, Store } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import { createClient } from 'redis';
import type { Logger, RouteGroup } from '../model.js';

/** Longest a rate-limit read may wait on Redis before the request goes through uncounted. */
const DEFAULT_REDIS_TIMEOUT_MS = 500;

export interface SharedRateLimits {
  /** express-rate-limit's Store for one route group, its counters in Redis. */
  store(group: RouteGroup): Store;
  /** Requests let through uncounted because Redis failed (the seam for a metric). */
  failOpenCount(): number;
  close(): Promise<void>;
}

/**
 * REDIS_URL: every route group's counters in one Redis (rate-limit-redis), so limits hold across
 * instances. When Redis is down or slow, requests are not refused because of it: the limit fails
 * open, each failure is logged (at most once per 10 s) and counted.
 */
export function redisRateLimits(
  url: string,
  options: {
    log: Logger;
    onFailOpen?: () => void;
    /** Key prefix, RATE_LIMIT_REDIS_PREFIX (default `rl:`): each deployment on one Redis its own. */
    prefix?: string;
    /** RATE_LIMIT_REDIS_TIMEOUT_MS: past it a count fails open. */
    timeoutMs?: number;
  },
): SharedRateLimits {
  const timeoutMs = options.timeoutMs ?? DEFAULT_REDIS_TIMEOUT_MS;
  // No offline queue: while disconnected a command fails at once instead of waiting for Redis.
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: 1000, reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2000) },
  });
  let failOpens = 0;
  let lastLogged = 0;
  client.on('error', (err: Error) => report(err));
  client.connect().catch((err: Error) => report(err));

  function report(err: Error): void {
    const now = Date.now();
    if (now - lastLogged < 10_000) return;
    lastLogged = now;
    // The URL may carry a password: only the error text is logged.
    options.log.warn(
      { event: 'rate_limit_redis_unavailable', error: err.message },
      `rate limits: Redis unavailable, requests pass uncounted (${err.message})`,
    );
  }
  const failedOpen = (err: unknown) => {
    failOpens++;
    options.onFailOpen?.();
    report(err as Error);
  };
  const sendCommand = (...args: string[]) => client.sendCommand(args) as Promise<never>;

  return {
    store: (group) =>
      new FailOpenStore(
        new RedisStore({ sendCommand, prefix: `${options.prefix ?? 'rl:'}${group}:` }),
        failedOpen,
        timeoutMs,
      ),
    failOpenCount: () => failOpens,
    async close() {
      if (client.isOpen) await client.close();
      else client.destroy();
    },
  };
}

function withTimeout<T>(p: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Wraps rate-limit-redis: (re)loads its scripts when needed (a store initialised while Redis was
 * down would otherwise keep failing after Redis is back) and turns every Redis failure into a
 * pass: one uncounted hit.
 */
class FailOpenStore implements Store {
  #ready: Promise<void> | undefined;
  #options: Options | undefined;
  readonly localKeys = false;

  constructor(
    private readonly inner: RedisStore,
    private readonly failedOpen: (err: unknown) => void,
    private readonly timeoutMs: number,
  ) {}

  init(options: Options): void {
    this.#options = options;
  }

  async increment(key: string): Promise<IncrementResponse> {
    try {
      await this.#init();
      return await withTimeout(this.inner.increment(key), this.timeoutMs);
    } catch (err) {
      this.#ready = undefined;
      this.failedOpen(err);
      return { totalHits: 1, resetTime: new Date(Date.now() + (this.#options?.windowMs ?? 60_000)) };
    }
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    try {
      await this.#init();
      return await withTimeout(this.inner.get(key), this.timeoutMs);
    } catch {
      this.#ready = undefined;
      return undefined;
    }
  }

  async decrement(key: string): Promise<void> {
    await withTimeout(this.inner.decrement(key), this.timeoutMs).catch(() => undefined);
  }

  async resetKey(key: string): Promise<void> {
    await withTimeout(this.inner.resetKey(key), this.timeoutMs).catch(() => undefined);
  }

  #init(): Promise<void> {
    this.#ready ??= withTimeout(this.inner.init(this.#options!), this.timeoutMs);
    return this.#ready;
  }
}
