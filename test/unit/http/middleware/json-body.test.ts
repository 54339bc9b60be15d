import { once } from 'node:events';
import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorHandler } from '../../../../src/http/middleware/error-handler.js';
import { jsonBody } from '../../../../src/http/middleware/json-body.js';
import { silentLogger } from '../../../../src/observability/logger.js';

type Answer = { status: number; body: unknown };

/**
 * A plain JSON request (content-length, application/json) takes the short reader; the same bytes
 * sent chunked (no content-length) take express.json. Both must answer alike.
 */
describe('jsonBody', () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    const app = express();
    app.post('/echo', jsonBody(), (req, res) => {
      res.json({ body: req.body ?? null });
    });
    app.use(errorHandler(silentLogger()));
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  const send = (bytes: Buffer, headers: Record<string, string>, chunked: boolean): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/echo',
          method: 'POST',
          headers: chunked ? headers : { ...headers, 'content-length': String(bytes.length) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      if (chunked) req.write(bytes.subarray(0, 1));
      req.end(chunked ? bytes.subarray(1) : bytes);
    });

  const deep = `${'['.repeat(40)}${']'.repeat(40)}`;
  const cases: Array<[string, Buffer, string]> = [
    ['an object', Buffer.from('{"a":"é","n":[1,2]}'), 'application/json'],
    ['an array', Buffer.from(' \n[1]'), 'application/json; charset=utf-8'],
    ['a UTF-8 BOM before the object', Buffer.from('\ufeff{"a":1}'), 'application/json'],
    ['a bare string (strict: object or array only)', Buffer.from('"x"'), 'application/json'],
    ['null', Buffer.from('null'), 'application/json'],
    ['malformed JSON', Buffer.from('{"a": '), 'application/json'],
    ['nesting past the bound', Buffer.from(deep), 'application/json'],
    ['a text body', Buffer.from('{"a":1}'), 'text/plain'],
    ['a charset the server does not speak', Buffer.from('{"a":1}'), 'application/json; charset=klingon'],
    ['a body over 100 kB', Buffer.from(`{"a":"${'x'.repeat(100 * 1024)}"}`), 'application/json'],
  ];

  it.each(cases)('%s: the short path answers as express.json does', async (_name, bytes, type) => {
    const plain = await send(bytes, { 'content-type': type }, false);
    const chunked = await send(bytes, { 'content-type': type }, true);
    expect(plain).toEqual(chunked);
  });

  it('answers what it parsed, and a 400 naming the body or the path', async () => {
    const ok = await send(Buffer.from('\ufeff{"a":"é"}'), { 'content-type': 'application/json' }, false);
    expect(ok).toEqual({ status: 200, body: { body: { a: 'é' } } });
    const bad = await send(Buffer.from('"x"'), { 'content-type': 'application/json' }, false);
    expect(bad).toMatchObject({
      status: 400,
      body: { code: 'INVALID_PARAMETER', details: { field: 'body' } },
    });
    const tooDeep = await send(Buffer.from(deep), { 'content-type': 'APPLICATION/JSON' }, false);
    expect(tooDeep).toMatchObject({ status: 400, body: { code: 'INVALID_PARAMETER' } });
    const large = await send(
      Buffer.from(`[${'1,'.repeat(60 * 1024)}1]`),
      { 'content-type': 'application/json' },
      false,
    );
    expect(large).toMatchObject({ status: 413, body: { code: 'PAYLOAD_TOO_LARGE' } });
  });
});
