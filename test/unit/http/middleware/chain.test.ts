import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chain } from '../../../../src/http/middleware/chain.js';

/** Who ran, in order, for one request. */
const steps = (req: express.Request): string[] => {
  const r = req as express.Request & { ran?: string[] };
  r.ran ??= [];
  return r.ran;
};
const mark =
  (name: string): RequestHandler =>
  (req, _res, next) => {
    steps(req).push(name);
    next();
  };
const answer: RequestHandler = (req, res) => {
  res.json({ ran: [...steps(req), 'answer'] });
};
const skippedErrorHandler: ErrorRequestHandler = (_err, req, _res, next) => {
  steps(req).push('error handler');
  next();
};
/** Each path's functions. */
const cases: Record<string, RequestHandler[]> = {
  '/in-order': [mark('a'), mark('b'), answer],
  '/next-error': [mark('a'), (_req, _res, next) => next(new Error('refused')), mark('never'), answer],
  '/throws': [
    mark('a'),
    () => {
      throw new Error('thrown');
    },
    answer,
  ],
  '/rejects': [mark('a'), async () => Promise.reject(new Error('rejected')), answer],
  '/rejects-empty': [mark('a'), async () => Promise.reject(undefined), answer],
  '/async-next': [
    mark('a'),
    async (_req, _res, next) => {
      await Promise.resolve();
      next();
    },
    answer,
  ],
  '/skip-route': [mark('a'), (_req, _res, next) => next('route'), answer],
  '/falls-through': [mark('a'), mark('b')],
  // An error handler inside a route's stack, as Express allows: skipped while there is no error.
  '/error-handler-inside': [mark('a'), skippedErrorHandler as unknown as RequestHandler, answer],
};

/** One app with each path's functions as Express's own route stack, or as one chain. */
function app(composed: boolean): express.Express {
  const a = express();
  for (const [path, handlers] of Object.entries(cases))
    if (composed) a.get(path, chain(handlers));
    else a.get(path, ...handlers);
  // After next('route') or a chain that falls through: the next matching route.
  a.get(/.*/, (req, res) => {
    res.status(404).json({ ran: [...steps(req), 'next route'] });
  });
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    res.status(500).json({ ran: steps(req), error: err instanceof Error ? err.message : String(err) });
  };
  a.use(onError);
  return a;
}

describe('chain: a route of several functions as one, answering as Express’s own stack does', () => {
  const servers: Server[] = [];
  const urls = { express: '', chain: '' };

  beforeAll(async () => {
    for (const composed of [false, true]) {
      const server = app(composed).listen(0, '127.0.0.1');
      await once(server, 'listening');
      servers.push(server);
      urls[composed ? 'chain' : 'express'] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }
  });
  afterAll(() => {
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  const expected: Record<string, { status: number; body: unknown }> = {
    '/in-order': { status: 200, body: { ran: ['a', 'b', 'answer'] } },
    '/next-error': { status: 500, body: { ran: ['a'], error: 'refused' } },
    '/throws': { status: 500, body: { ran: ['a'], error: 'thrown' } },
    '/rejects': { status: 500, body: { ran: ['a'], error: 'rejected' } },
    '/rejects-empty': { status: 500, body: { ran: ['a'], error: 'Rejected promise' } },
    '/async-next': { status: 200, body: { ran: ['a', 'answer'] } },
    '/skip-route': { status: 404, body: { ran: ['a', 'next route'] } },
    '/falls-through': { status: 404, body: { ran: ['a', 'b', 'next route'] } },
    '/error-handler-inside': { status: 200, body: { ran: ['a', 'answer'] } },
  };

  for (const [path, want] of Object.entries(expected))
    it(`${path}: the same answer from both`, async () => {
      for (const base of [urls.express, urls.chain]) {
        const res = await fetch(`${base}${path}`);
        expect({ status: res.status, body: await res.json() }).toEqual(want);
      }
    });

  it('a single function is passed through as it is', () => {
    expect(chain([answer])).toBe(answer);
  });
});
