import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closeHttpPools,
  HttpFailure,
  HttpPools,
  postJson,
  SharedHttpPools,
} from '../../../src/outbound/http-json.js';

// Calls that are answered at once: their deadline only has to outlast a busy machine.
const ANSWERED_MS = 60_000;

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
        timeoutMs: ANSWERED_MS,
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
    await postJson(`http://us%40er:p%3Ass@127.0.0.1:${port}/c`, {}, { timeoutMs: ANSWERED_MS });
    const last = seen.at(-1)!;
    expect(last.url).toBe('/c');
    expect(last.headers.authorization).toBe(`Basic ${Buffer.from('us@er:p:ss').toString('base64')}`);
  });

  it('refuses a header value that would inject another header', async () => {
    const before = seen.length;
    await expect(
      postJson(
        `http://127.0.0.1:${port}/c`,
        {},
        { headers: { 'x-a': 'v\r\nx-b: w' }, timeoutMs: ANSWERED_MS },
      ),
    ).rejects.toThrow();
    expect(seen.length).toBe(before);
  });
});

/**
 * The answers a hosting service or claims source may send, written byte for byte by a TCP server:
 * each test's `answer` gets the socket and the request text once the request is complete.
 */
describe('postJson reads every HTTP/1.1 answer framing', () => {
  let server: ReturnType<typeof createTcpServer>;
  let url: string;
  let answer: (socket: Socket, request: string) => void = () => {};
  const connections: number[] = [];

  beforeAll(async () => {
    server = createTcpServer((socket) => {
      connections.push(socket.remotePort ?? 0);
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(text)![1]);
        if (text.length < end + 4 + length) return;
        const request = text.slice(0, end + 4 + length);
        text = text.slice(end + 4 + length);
        answer(socket, request);
      });
      socket.on('error', () => {});
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`;
  });
  afterAll(() => {
    server.close();
  });

  /** Writes `parts` one by one, each in its own TCP segment where the kernel allows. */
  const writeSlowly = (socket: Socket, parts: string[]) => {
    let i = 0;
    const next = () => {
      if (i < parts.length) socket.write(parts[i++]!, () => setImmediate(next));
    };
    next();
  };
  const call = (timeoutMs = ANSWERED_MS) => postJson(url, { a: 1 }, { timeoutMs });

  it('content-length, with the head and body split into single bytes', async () => {
    answer = (socket) => {
      const body = Buffer.from('{"ok":"é"}');
      const head = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`);
      const bytes = Buffer.concat([head, body]);
      let i = 0;
      const next = () => {
        if (i < bytes.length) socket.write(bytes.subarray(i, ++i), () => setImmediate(next));
      };
      next();
    };
    expect(await call()).toEqual({ status: 200, body: { ok: 'é' } });
  });

  it('chunked transfer coding with extensions and trailers, and a 103 before the answer', async () => {
    answer = (socket) =>
      writeSlowly(socket, [
        'HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n',
        'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n',
        '5;ext=1\r\n{"a":\r\n',
        'A\r\n"bcdefgh"}\r\n0\r\nX-Trailer: t\r\n\r\n',
      ]);
    expect(await call()).toEqual({ status: 201, body: { a: 'bcdefgh' } });
  });

  it('keeps the connection for the next request, and opens a new one after connection: close', async () => {
    // Each call starts in a later event-loop turn, as calls made for separate incoming requests
    // do: undici hands a connection to the next request one turn after its answer (a server that
    // closes despite keep-alive is seen first).
    const nextCall = async () => {
      await new Promise(setImmediate);
      return call();
    };
    const used: number[] = [];
    answer = (socket) => {
      used.push(socket.remotePort ?? 0);
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
    };
    await nextCall();
    await nextCall();
    await nextCall();
    expect(new Set(used).size).toBe(1);
    let closedByClient: Promise<unknown> = Promise.resolve();
    answer = (socket) => {
      used.push(socket.remotePort ?? 0);
      closedByClient = once(socket, 'close');
      socket.write('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}');
    };
    await nextCall();
    // The server leaves the connection open; the client closes it after the answer.
    await closedByClient;
    const closed = used.at(-1);
    answer = (socket) => {
      used.push(socket.remotePort ?? 0);
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
    };
    await nextCall();
    expect(used.at(-1)).not.toBe(closed);
  });

  it('past 64 connections a request waits for a free one, and each gets its own answer', async () => {
    const before = connections.length;
    let n = 0;
    answer = (socket, request) => {
      const id = /"i":(\d+)/.exec(request)![1];
      const body = `{"i":${id},"n":${n++}}`;
      // Answer in a later turn so that all requests are in flight at once.
      setImmediate(() =>
        socket.write(`HTTP/1.1 201 Created\r\nContent-Length: ${body.length}\r\n\r\n${body}`),
      );
    };
    const answers = await Promise.all(
      Array.from({ length: 150 }, (_, i) => postJson(url, { i }, { timeoutMs: ANSWERED_MS })),
    );
    answers.forEach((res, i) => {
      expect(res).toMatchObject({ status: 201, body: { i } });
    });
    expect(connections.length - before).toBeLessThanOrEqual(64);
  });

  it('an idle connection the server closed is not used again', async () => {
    let serverSide: Promise<unknown> = Promise.resolve();
    answer = (socket) => {
      serverSide = once(socket, 'close');
      socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
    };
    await call();
    // Closed on the server once the client answered the FIN: the pool has seen it too.
    await serverSide;
    answer = (socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n[1 ]');
    expect(await call()).toEqual({ status: 200, body: [1] });
  });

  it('closing the pools (the context closes) ends idle connections; a later call opens a new one', async () => {
    let open: Promise<unknown> = Promise.resolve();
    answer = (socket) => {
      open = once(socket, 'close');
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
    };
    await call();
    await closeHttpPools();
    await open;
    expect(await call()).toEqual({ status: 200, body: {} });
  });

  it('an HTTP/1.0 answer without length is read until close; 204 has no body; non-JSON is undefined', async () => {
    answer = (socket) => {
      socket.write('HTTP/1.0 200 OK\r\n\r\n{"until":');
      setImmediate(() => socket.end('"close"}'));
    };
    expect(await call()).toEqual({ status: 200, body: { until: 'close' } });
    answer = (socket) => socket.write('HTTP/1.1 204 No Content\r\n\r\n');
    expect(await call()).toEqual({ status: 204, body: undefined });
    answer = (socket) => socket.write('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 5\r\n\r\noops!');
    expect(await call()).toEqual({ status: 502, body: undefined });
  });

  it('a malformed, oversized or late answer, and an unreachable host, are typed failures', async () => {
    answer = (socket) => socket.write('SMTP ready\r\n\r\n');
    await expect(call()).rejects.toMatchObject({ name: 'HttpFailure', kind: 'network' });
    answer = (socket) => socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n`);
    await expect(call()).rejects.toMatchObject({ kind: 'network', message: 'response too large' });
    answer = (socket) => {
      socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
      const chunk = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 20; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    };
    await expect(call()).rejects.toMatchObject({ kind: 'network', message: 'response too large' });
    answer = () => {};
    const late = await call(50).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(HttpFailure);
    expect(late).toMatchObject({ kind: 'timeout' });
    // The deadline covers the body too: a head on time and a body that never ends.
    answer = (socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"a"');
    await expect(call(100)).rejects.toMatchObject({ name: 'HttpFailure', kind: 'timeout' });
    const closed = createTcpServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await expect(postJson(`http://127.0.0.1:${port}/`, {}, { timeoutMs: ANSWERED_MS })).rejects.toMatchObject(
      {
        kind: 'network',
      },
    );
  });
});

// A deployment's tenants: each context's HttpPools on the deployment's SharedHttpPools.
describe('HttpPools on shared pools', () => {
  let server: Server;
  let url: string;
  const held: Array<() => void> = [];
  const sockets = new Set<number>();
  const holding = new EventEmitter();
  const untilHeld = async (n: number) => {
    while (held.length < n) await once(holding, 'held');
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      sockets.add(req.socket.remotePort ?? 0);
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end(body);
        if (JSON.parse(body).hold) {
          held.push(answer);
          holding.emit('held');
        } else answer();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/c`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it("two contexts' calls to one origin reuse one connection", async () => {
    const shared = new SharedHttpPools();
    const a = new HttpPools(shared);
    const b = new HttpPools(shared);
    sockets.clear();
    expect(await a.post(url, { n: 1 }, { timeoutMs: ANSWERED_MS })).toEqual({ status: 200, body: { n: 1 } });
    // A later turn, as a call for another incoming request is: the connection is free again.
    await new Promise(setImmediate);
    expect(await b.post(url, { n: 2 }, { timeoutMs: ANSWERED_MS })).toEqual({ status: 200, body: { n: 2 } });
    expect(sockets.size).toBe(1);
    // A context closing leaves the shared connections to the others.
    await a.close();
    await new Promise(setImmediate);
    expect(await b.post(url, { n: 3 }, { timeoutMs: ANSWERED_MS })).toEqual({ status: 200, body: { n: 3 } });
    expect(sockets.size).toBe(1);
    await shared.close();
  });

  it("a context's calls held by the upstream fill its own 64, not another context's; destroy aborts its own only", async () => {
    const shared = new SharedHttpPools();
    const a = new HttpPools(shared);
    const b = new HttpPools(shared);
    const aCalls = Array.from({ length: 65 }, (_, i) =>
      a.post(url, { hold: true, i }, { timeoutMs: ANSWERED_MS }).catch((e: unknown) => e),
    );
    await untilHeld(64);
    // A's 65th waits for one of its own 64; B's call is answered meanwhile.
    expect(await b.post(url, { n: 1 }, { timeoutMs: ANSWERED_MS })).toEqual({ status: 200, body: { n: 1 } });
    expect(held.length).toBe(64);
    held.shift()!();
    await untilHeld(64);
    expect(await aCalls[0]).toEqual({ status: 200, body: { hold: true, i: 0 } });
    // A's wait is under its deadline too.
    await expect(a.post(url, { n: 2 }, { timeoutMs: 50 })).rejects.toMatchObject({ kind: 'timeout' });
    await a.destroy();
    const rest = await Promise.all(aCalls.slice(1));
    expect(rest.every((e) => e instanceof HttpFailure && e.kind === 'network')).toBe(true);
    expect(await b.post(url, { n: 3 }, { timeoutMs: ANSWERED_MS })).toEqual({ status: 200, body: { n: 3 } });
    held.length = 0;
    server.closeAllConnections();
    await shared.close();
  });
});
