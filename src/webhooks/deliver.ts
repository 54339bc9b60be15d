import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { type Dispatcher, Pool } from 'undici';
import { type EndpointPolicy, isPrivateAddress } from './endpoint-address.js';

/** How long a receiver has to answer (2xx within it is a delivery). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** The most of a receiver's answer read (kept as the attempt's error text); the rest is dropped unread. */
export const RESPONSE_BYTES = 1024;
/** Connections per receiving origin; further deliveries to it wait for one to be free. */
const CONNECTIONS_PER_ORIGIN = 16;

export interface DeliveryResult {
  ok: boolean;
  /** The receiver's status, when it answered. */
  status?: number;
  /** Why it is not delivered: the status and the start of the answer, or the network error. */
  error?: string;
}

/**
 * Resolves like `dns.lookup`, refusing a private address where the policy forbids it: checked at
 * connection time, so a name that resolves elsewhere after registration cannot slip through. (An
 * IP literal is not looked up: `WebhookSender` checks it before sending, so an endpoint registered
 * under an older policy is held to the current one.)
 */
function guardedLookup(policy: EndpointPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const allowed = addresses.filter(
        (a) => !policy.production || policy.allowPrivate || !isPrivateAddress(a.address),
      );
      if (allowed.length === 0)
        return callback(
          Object.assign(new Error(`${hostname} resolves only to private addresses`), { code: 'EPRIVATE' }),
          '',
          0,
        );
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      return callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/** One signed event to send: the target, its three Standard Webhooks headers and its body. */
export interface OutgoingDelivery {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * The receiver's answer to one delivery, read through undici's dispatch handler (no response
 * stream, no promise per request). The status decides: a 2xx head is a delivery at once, and
 * what follows it is dropped (an answer whose body breaks off after a 2xx head is still
 * delivered). Of any other answer the first `RESPONSE_BYTES` are kept as the error; an answer
 * longer than that is cut off with its connection.
 */
class Answer implements Dispatcher.DispatchHandler {
  private status: number | undefined;
  private chunks: Buffer[] = [];
  private kept = 0;
  private controller: Dispatcher.DispatchController | undefined;
  private settled = false;

  constructor(
    private readonly done: (result: DeliveryResult) => void,
    private readonly timedOut: string,
  ) {}

  /** Answers `result` once; a later event of the same request changes nothing. */
  private settle(result: DeliveryResult): void {
    if (this.settled) return;
    this.settled = true;
    this.done(result);
  }

  /** The deadline passed: no answer (a request still queued is dropped when it would start). */
  expire(): void {
    if (this.settled) return;
    this.settle({ ok: false, error: this.timedOut });
    this.controller?.abort(new Error(this.timedOut));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error(this.timedOut));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number): void {
    // 1xx heads come before the answer.
    if (status < 200) return;
    this.status = status;
    if (status < 300) this.settle({ ok: true, status });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const room = RESPONSE_BYTES - this.kept;
    const keep = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (this.status! >= 300) this.chunks.push(keep);
    this.kept += keep.length;
    if (keep !== chunk) {
      this.failed();
      controller.abort(new Error('answer longer than read'));
    }
  }

  onResponseEnd(): void {
    this.failed();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }

  /** The request broke off (or could not be sent): a non-2xx answer keeps what came of it. */
  fail(error: Error): void {
    if (this.status !== undefined && this.status >= 300) this.failed();
    else this.settle({ ok: false, error: error.message });
  }

  /** A non-2xx answer, with the start of its body. */
  private failed(): void {
    if (this.status === undefined || this.status < 300) return;
    const text = Buffer.concat(this.chunks).toString('utf8');
    this.settle({ ok: false, status: this.status, error: `HTTP ${this.status}${text ? `: ${text}` : ''}` });
  }
}

/**
 * Sends signed events under one endpoint policy, with keep-alive connections per receiving origin
 * (undici; node's https trust, the host as SNI name), so that a sweep's deliveries to an endpoint
 * reuse a few sockets instead of opening one each. Idle sockets are unref'd by undici and closed
 * after its keep-alive timeout.
 */
export class WebhookSender {
  private readonly pools = new Map<string, Pool>();
  private readonly lookup: LookupFunction;
  private readonly targets = new Map<string, { origin: string; path: string; refused: boolean }>();

  /** `timeoutMs`: how long a receiver has to answer (default `DELIVERY_TIMEOUT_MS`). */
  constructor(
    private readonly policy: EndpointPolicy,
    private readonly timeoutMs = DELIVERY_TIMEOUT_MS,
  ) {
    this.lookup = guardedLookup(policy);
  }

  private poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: CONNECTIONS_PER_ORIGIN,
        connect: { lookup: this.lookup, timeout: this.timeoutMs },
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** An endpoint URL's origin and path, parsed once per URL, and whether the policy refuses its IP literal. */
  private target(url: string): { origin: string; path: string; refused: boolean } {
    let t = this.targets.get(url);
    if (!t) {
      const u = new URL(url);
      const refused =
        this.policy.production &&
        !this.policy.allowPrivate &&
        isPrivateAddress(u.hostname.replace(/^\[|\]$/g, ''));
      t = { origin: u.origin, path: `${u.pathname}${u.search}`, refused };
      if (this.targets.size >= 1024) this.targets.clear();
      this.targets.set(url, t);
    }
    return t;
  }

  /** One POST of a signed event (see `postAll`). */
  async post(url: string, headers: Record<string, string>, body: string): Promise<DeliveryResult> {
    return (await this.postAll([{ url, headers, body }]))[0]!;
  }

  /**
   * POSTs signed events, all at once, and answers each one's result in order, once every one has
   * its result (see `postEach`).
   */
  postAll(deliveries: readonly OutgoingDelivery[]): Promise<DeliveryResult[]> {
    const results = new Array<DeliveryResult>(deliveries.length);
    return new Promise((resolve) => {
      this.postEach(deliveries, (i, result) => {
        results[i] = result;
      }).then(() => resolve(results));
    });
  }

  /**
   * POSTs signed events, all at once, and hands each one's result to `onResult` as soon as it has
   * it (a receiver that answers at once is not kept waiting for one that does not); resolves once
   * every one has its result. Each has the sender's timeout to answer, from now (one timer for them
   * all). Redirects are not followed (a 3xx is not a delivery), and at most `RESPONSE_BYTES` of an
   * answer are read: the rest is dropped with its connection.
   */
  postEach(
    deliveries: readonly OutgoingDelivery[],
    onResult: (index: number, result: DeliveryResult) => void,
  ): Promise<void> {
    if (deliveries.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      let open = deliveries.length;
      const timedOut = `no answer within ${this.timeoutMs} ms`;
      const answers = deliveries.map(
        (_, i) =>
          new Answer((result) => {
            onResult(i, result);
            if (--open === 0) {
              clearTimeout(timer);
              resolve();
            }
          }, timedOut),
      );
      const timer = setTimeout(() => {
        for (const a of answers) a.expire();
      }, this.timeoutMs);
      deliveries.forEach((d, i) => {
        const answer = answers[i]!;
        try {
          const { origin, path, refused } = this.target(d.url);
          if (refused) throw new Error(`${origin} is a private address`);
          this.poolFor(origin).dispatch(
            {
              origin,
              path,
              method: 'POST',
              headers: {
                ...d.headers,
                'content-type': 'application/json',
                'user-agent': 'issuer-kit-webhooks',
              },
              body: d.body,
            },
            answer,
          );
        } catch (err) {
          answer.fail(err as Error);
        }
      });
    });
  }

  /** Closes every connection; a later delivery opens new ones. */
  async close(): Promise<void> {
    const open = [...this.pools.values()];
    this.pools.clear();
    await Promise.allSettled(open.map((p) => p.destroy()));
  }
}
