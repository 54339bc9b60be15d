import {
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

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
  ) {
    super(message);
  }
}

const agents = {
  http: new HttpAgent({ keepAlive: true, maxSockets: 64 }),
  https: new HttpsAgent({ keepAlive: true, maxSockets: 64 }),
};

// Answers larger than this are not ours to read (a misrouted request, a hostile upstream).
const MAX_RESPONSE_BYTES = 1024 * 1024;

interface Target {
  https: boolean;
  options: RequestOptions;
  /** The first header lines of every request to this URL (`[name, value, …]`, rawHeaders form). */
  headers: string[];
}
// Parsed request targets by URL: the few upstream URLs are parsed once, not per request.
const targets = new Map<string, Target>();

function targetFor(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const u = new URL(url);
    const https = u.protocol === 'https:';
    // node:http sets Host itself only for object headers; `u.host` keeps IPv6 brackets and a
    // non-default port, as it would.
    const headers = ['host', u.host, 'content-type', 'application/json', 'accept', 'application/json'];
    if (u.username || u.password) {
      const auth = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
      headers.push('authorization', `Basic ${Buffer.from(auth).toString('base64')}`);
    }
    target = {
      https,
      headers,
      options: {
        protocol: u.protocol,
        hostname: u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname,
        port: u.port || undefined,
        path: `${u.pathname}${u.search}`,
        method: 'POST',
        agent: https ? agents.https : agents.http,
      },
    };
    if (targets.size >= 64) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/**
 * A small JSON-over-HTTP client on node:http(s) with keep-alive pools. Measured here, a fetch()
 * round trip costs about three times the CPU of the same request through node:http, and every
 * issuance makes two upstream calls, so the per-request work is kept small: the target is parsed
 * once per URL, a body already serialised is sent as is, and the deadline is one timer (an
 * AbortSignal.timeout per request costs an EventTarget, a listener and a timer).
 * Callers check the status.
 */
export function postJson(
  url: string,
  payload: unknown,
  options: { headers?: Record<string, string>; timeoutMs: number; serialized?: boolean },
): Promise<JsonResponse> {
  const target = targetFor(url);
  const body = options.serialized ? (payload as string) : JSON.stringify(payload);
  // Headers as one flat array: node:http then writes them as given (still validating each name
  // and value) instead of storing each through setHeader.
  const headers = [...target.headers, 'content-length', String(Buffer.byteLength(body))];
  if (options.headers) for (const name in options.headers) headers.push(name, options.headers[name]!);
  return new Promise<JsonResponse>((resolve, reject) => {
    let failure: HttpFailure | undefined;
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(
        failure ??
          new HttpFailure('network', err.message === 'response too large' ? err.message : 'unreachable'),
      );
    };
    const req = (target.https ? httpsRequest : httpRequest)(
      { ...target.options, headers },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) {
            req.destroy(new Error('response too large'));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => {
          clearTimeout(timer);
          const text =
            chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', fail);
      },
    );
    const timer = setTimeout(() => {
      failure = new HttpFailure('timeout', `timed out after ${options.timeoutMs} ms`);
      req.destroy(failure);
    }, options.timeoutMs);
    req.on('error', fail);
    req.end(body);
  });
}
