import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RESPONSE_BYTES, WebhookSender } from '../../../src/webhooks/deliver.js';

/** A loopback HTTP server answering with `handle`; counts requests and connections. */
async function server(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  const seen = { requests: 0, connections: 0 };
  const s: Server = createServer((req, res) => {
    seen.requests++;
    req.resume();
    req.on('end', () => handle(req, res));
  });
  s.on('connection', () => seen.connections++);
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    seen,
    close: () => {
      s.closeAllConnections();
      return new Promise<void>((ok) => s.close(() => ok()));
    },
  };
}

// docs/operations.md "Webhooks": a 2xx is a delivery; a redirect is not followed; only the first
// kilobyte of an answer is read; production reaches no private address.
describe('webhook sender', () => {
  const development = { production: false, allowPrivate: false };
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });
  const sender = (policy = development) => {
    const s = new WebhookSender(policy);
    cleanup.push(() => s.close());
    return s;
  };

  it('a 2xx is delivered; deliveries to one receiver share a keep-alive connection', async () => {
    const hook = await server((_req, res) => res.writeHead(204).end());
    cleanup.push(hook.close);
    const s = sender();
    for (let i = 0; i < 10; i++) expect(await s.post(hook.url, {}, '{}')).toEqual({ ok: true, status: 204 });
    expect(hook.seen.requests).toBe(10);
    // A connection is back in the pool a moment after its answer is read, so a request sent at
    // once may open a second one; never one per request.
    expect(hook.seen.connections).toBeLessThanOrEqual(2);
  });

  it('a redirect is not followed and is not a delivery', async () => {
    const elsewhere = await server((_req, res) => res.writeHead(204).end());
    cleanup.push(elsewhere.close);
    const hook = await server((_req, res) => res.writeHead(307, { location: elsewhere.url }).end());
    cleanup.push(hook.close);
    const result = await sender().post(hook.url, {}, '{}');
    expect(result).toMatchObject({ ok: false, status: 307 });
    expect(elsewhere.seen.requests).toBe(0);
  });

  it('reads only the first kilobyte of an answer, even one that never ends', async () => {
    // 1.5 KB, then the answer stays open: a reader waiting for its end would only get the timeout.
    const hook = await server((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.write('x'.repeat(RESPONSE_BYTES + 512));
    });
    cleanup.push(hook.close);
    const result = await sender().post(hook.url, {}, '{}');
    expect(result.ok).toBe(false);
    expect(result.status).toBe(500);
    expect(result.error).toBe(`HTTP 500: ${'x'.repeat(RESPONSE_BYTES)}`);
  });

  it('a 2xx head is a delivery even when its body never ends', async () => {
    const hook = await server((_req, res) => {
      res.writeHead(200);
      res.write('y'.repeat(RESPONSE_BYTES * 4));
    });
    cleanup.push(hook.close);
    expect(await sender().post(hook.url, {}, '{}')).toEqual({ ok: true, status: 200 });
  });

  it('in production, a name that resolves to a private address is not connected to', async () => {
    const hook = await server((_req, res) => res.writeHead(204).end());
    cleanup.push(hook.close);
    const result = await sender({ production: true, allowPrivate: false }).post(
      `http://localhost:${hook.port}/hooks`,
      {},
      '{}',
    );
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/private/);
    expect(hook.seen.requests).toBe(0);
    // WEBHOOK_ALLOW_PRIVATE=1 lets it through.
    expect(
      await sender({ production: true, allowPrivate: true }).post(
        `http://localhost:${hook.port}/hooks`,
        {},
        '{}',
      ),
    ).toEqual({ ok: true, status: 204 });
  });
});
