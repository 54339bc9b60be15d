import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { type EndpointPolicy, isPrivateAddress } from './endpoint-address.js';

/** How long a receiver has to answer (2xx within it is a delivery). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** The most of a receiver's answer kept (as the attempt's error text); the rest is not read. */
const RESPONSE_BYTES = 1024;

export interface DeliveryResult {
  ok: boolean;
  /** The receiver's status, when it answered. */
  status?: number;
  /** Why it is not delivered: the status and the start of the answer, or the network error. */
  error?: string;
}

/**
 * Resolves like `dns.lookup`, refusing a private address where the policy forbids it: checked at
 * connection time, so a name that resolves elsewhere after registration cannot slip through.
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

/** One POST of a signed event; redirects are not followed (a 3xx is not a delivery). */
export function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  policy: EndpointPolicy,
): Promise<DeliveryResult> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = send(
      target,
      {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'issuer-kit-webhooks',
        },
        lookup: guardedLookup(policy),
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (chunk: Buffer) => {
          if (kept < RESPONSE_BYTES) {
            chunks.push(chunk.subarray(0, RESPONSE_BYTES - kept));
            kept += chunk.length;
          } else res.destroy();
        });
        const done = () => {
          if (status >= 200 && status < 300) return resolve({ ok: true, status });
          const text = Buffer.concat(chunks).toString('utf8').slice(0, RESPONSE_BYTES);
          resolve({ ok: false, status, error: `HTTP ${status}${text ? `: ${text}` : ''}` });
        };
        res.once('end', done);
        res.once('close', done);
      },
    );
    req.once('error', (err) => resolve({ ok: false, error: err.message }));
    req.end(body);
  });
}
