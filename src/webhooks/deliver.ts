import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { EventEmitter } from 'node:events';
import type { LookupFunction } from 'node:net';
import { Pool } from 'undici';
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
 * IP literal is not looked up: registration has checked it, and it cannot change.)
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

/** What undici reads of an EventEmitter given as `signal` (cheaper than an AbortController per call). */
type Deadline = EventEmitter & { aborted?: boolean; reason?: Error };

/**
 * Sends signed events under one endpoint policy, with keep-alive connections per receiving origin
 * (undici; node's https trust, the host as SNI name), so that a sweep's deliveries to an endpoint
 * reuse a few sockets instead of opening one each. Idle sockets are unref'd by undici and closed
 * after its keep-alive timeout.
 */
export class WebhookSender {
  private readonly pools = new Map<string, Pool>();
  private readonly lookup: LookupFunction;

  constructor(policy: EndpointPolicy) {
    this.lookup = guardedLookup(policy);
  }

  private poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: CONNECTIONS_PER_ORIGIN,
        connect: { lookup: this.lookup, timeout: DELIVERY_TIMEOUT_MS },
        headersTimeout: DELIVERY_TIMEOUT_MS,
        bodyTimeout: DELIVERY_TIMEOUT_MS,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /**
   * One POST of a signed event. Redirects are not followed (a 3xx is not a delivery), and at most
   * `RESPONSE_BYTES` of the answer are read: the rest is dropped with its connection.
   */
  async post(url: string, headers: Record<string, string>, body: string): Promise<DeliveryResult> {
    const target = new URL(url);
    const deadline: Deadline = new EventEmitter();
    const timer = setTimeout(() => {
      deadline.reason = new Error(`no answer within ${DELIVERY_TIMEOUT_MS} ms`);
      deadline.aborted = true;
      deadline.emit('abort');
    }, DELIVERY_TIMEOUT_MS);
    try {
      const res = await this.poolFor(target.origin).request({
        path: `${target.pathname}${target.search}`,
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'issuer-kit-webhooks' },
        body,
        signal: deadline,
      });
      const status = res.statusCode;
      if (status >= 200 && status < 300) {
        // The status decides: the body is dropped (its first bytes, then the connection), and an
        // answer whose body breaks off after a 2xx head is still delivered.
        await res.body.dump({ limit: RESPONSE_BYTES }).catch(() => {});
        return { ok: true, status };
      }
      const text = await readBounded(res.body).catch(() => '');
      return { ok: false, status, error: `HTTP ${status}${text ? `: ${text}` : ''}` };
    } catch (err) {
      return { ok: false, error: deadline.aborted ? deadline.reason!.message : (err as Error).message };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes every connection; a later delivery opens new ones. */
  async close(): Promise<void> {
    const open = [...this.pools.values()];
    this.pools.clear();
    await Promise.allSettled(open.map((p) => p.destroy()));
  }
}

/** The first `RESPONSE_BYTES` of an answer as text; an answer longer than that is cut off unread. */
async function readBounded(stream: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let kept = 0;
  for await (const chunk of stream) {
    chunks.push(chunk.subarray(0, RESPONSE_BYTES - kept));
    kept += Math.min(chunk.length, RESPONSE_BYTES - kept);
    if (kept >= RESPONSE_BYTES) {
      stream.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}
