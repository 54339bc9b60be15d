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
  const sender = (policy = development, timeoutMs?: number) => {
    const s = new WebhookSender(policy, timeoutMs);
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

  it('sends a batch at once and answers each delivery its own result, in order', async () => {
    const hook = await server((req, res) => res.writeHead(req.url === '/hooks?fail' ? 503 : 204).end('no'));
    cleanup.push(hook.close);
    const results = await sender().postAll(
      Array.from({ length: 40 }, (_, i) => ({
        url: i % 10 === 3 ? `${hook.url}?fail` : hook.url,
        headers: { 'webhook-id': `msg_${i}` },
        body: '{}',
      })),
    );
    expect(results).toEqual(
      Array.from({ length: 40 }, (_, i) =>
        i % 10 === 3 ? { ok: false, status: 503, error: 'HTTP 503: no' } : { ok: true, status: 204 },
      ),
    );
    expect(hook.seen.requests).toBe(40);
  });

  it('an answer that does not come in time is not a delivery, nor is a request still waiting for a connection', async () => {
    // Never answers: every connection stays busy, so requests past the pool's connections wait.
    const hook = await server(() => {});
    cleanup.push(hook.close);
    const results = await sender(development, 300).postAll(
      Array.from({ length: 20 }, () => ({ url: hook.url, headers: {}, body: '{}' })),
    );
    expect(results).toEqual(
      Array.from({ length: 20 }, () => ({ ok: false, error: 'no answer within 300 ms' })),
    );
  });

  it('a refused connection is not a delivery', async () => {
    const hook = await server((_req, res) => res.writeHead(204).end());
    await hook.close();
    const result = await sender().post(hook.url, {}, '{}');
    expect(result.ok).toBe(false);
    expect(result.status).toBeUndefined();
    expect(result.error).toMatch(/ECONNREFUSED|connect/);
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

  it('in production, an IP literal the policy refuses (an endpoint registered under an older one) is not connected to', async () => {
    const hook = await server((_req, res) => res.writeHead(204).end());
    cleanup.push(hook.close);
    for (const host of ['127.0.0.1', '[::127.0.0.1]', '[::ffff:7f00:1]']) {
      const result = await sender({ production: true, allowPrivate: false }).post(
        `http://${host}:${hook.port}/hooks`,
        {},
        '{}',
      );
      expect(result.ok).toBe(false);
      expect(result.error).toMatch(/private/);
    }
    expect(hook.seen.requests).toBe(0);
    expect(
      await sender({ production: true, allowPrivate: true }).post(
        `http://127.0.0.1:${hook.port}/hooks`,
        {},
        '{}',
      ),
    ).toEqual({ ok: true, status: 204 });
  });
});
