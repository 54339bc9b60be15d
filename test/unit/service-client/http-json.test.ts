import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson } from '../../../src/service-client/http-json.js';

// The request as it reaches the upstream: one loopback server records each.
describe('postJson', () => {
  let server: Server;
  let port: number;
  const seen: Array<{ url: string; method: string; headers: IncomingMessage['headers']; body: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', method: req.method ?? '', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it('sends host, JSON content headers, its exact length and the caller headers; parses the answer', async () => {
    const payload = { userId: 'ü-1', n: 1 };
    for (let i = 0; i < 2; i++) {
      const res = await postJson(`http://127.0.0.1:${port}/claims?x=1`, payload, {
        headers: { 'x-request-id': `r-${i}`, 'idempotency-key': 'k' },
        timeoutMs: 2000,
      });
      expect(res).toEqual({ status: 200, body: { ok: true } });
    }
    const [first, second] = seen.slice(-2);
    expect(first).toMatchObject({ url: '/claims?x=1', method: 'POST', body: JSON.stringify(payload) });
    expect(first!.headers).toMatchObject({
      host: `127.0.0.1:${port}`,
      'content-type': 'application/json',
      accept: 'application/json',
      'content-length': String(Buffer.byteLength(JSON.stringify(payload))),
      connection: 'keep-alive',
      'x-request-id': 'r-0',
      'idempotency-key': 'k',
    });
    expect(first!.headers.authorization).toBeUndefined();
    // The second request to the same URL carries its own headers, not the first one's.
    expect(second!.headers['x-request-id']).toBe('r-1');
  });

  it('turns credentials in the URL into Basic authorization, never into the path', async () => {
    await postJson(`http://us%40er:p%3Ass@127.0.0.1:${port}/c`, {}, { timeoutMs: 2000 });
    const last = seen.at(-1)!;
    expect(last.url).toBe('/c');
    expect(last.headers.authorization).toBe(`Basic ${Buffer.from('us@er:p:ss').toString('base64')}`);
  });

  it('refuses a header value that would inject another header', async () => {
    const before = seen.length;
    await expect(
      postJson(`http://127.0.0.1:${port}/c`, {}, { headers: { 'x-a': 'v\r\nx-b: w' }, timeoutMs: 2000 }),
    ).rejects.toThrow();
    expect(seen.length).toBe(before);
  });
});
