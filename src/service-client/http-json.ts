import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/**
 * A small JSON-over-HTTP client on node:http(s) with keep-alive pools. Measured here, a fetch()
 * round trip costs about three times the CPU of the same request through node:http, and every
 * issuance makes one upstream call. Timeouts go through AbortSignal; callers check the status.
 */
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

export function postJson(
  url: string,
  payload: unknown,
  options: { headers?: Record<string, string>; timeoutMs: number },
): Promise<JsonResponse> {
  const target = new URL(url);
  const body = JSON.stringify(payload);
  const https = target.protocol === 'https:';
  const request = https ? httpsRequest : httpRequest;
  return new Promise<JsonResponse>((resolve, reject) => {
    const signal = AbortSignal.timeout(options.timeoutMs);
    const req = request(
      target,
      {
        method: 'POST',
        agent: https ? agents.https : agents.http,
        signal,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(body),
          ...options.headers,
        },
      },
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
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', (err) => reject(toFailure(err, signal, options.timeoutMs)));
      },
    );
    req.on('error', (err) => reject(toFailure(err, signal, options.timeoutMs)));
    req.end(body);
  });
}

function toFailure(err: Error, signal: AbortSignal, timeoutMs: number): HttpFailure {
  if (signal.aborted) return new HttpFailure('timeout', `timed out after ${timeoutMs} ms`);
  return new HttpFailure(
    'network',
    err.message === 'response too large' ? 'response too large' : 'unreachable',
  );
}
