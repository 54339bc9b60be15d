import type { Server } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type ResponseMismatch,
  responseContract,
  watchResponses,
} from '../../../../src/http/middleware/response-contract.js';
import type { Route } from '../../../../src/http/routes/route.js';

// docs/operations.md "API contract and docs page": the suite's check of every answer against its
// route's description, on a route of its own (the unit project sets no watcher otherwise).
describe('response contract check', () => {
  const found: ResponseMismatch[] = [];
  let body: unknown;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    watchResponses((m) => found.push(m));
    const row: Route = {
      method: 'get',
      path: '/probe',
      group: 'ops',
      auth: 'none',
      doc: {
        summary: 'probe',
        operationId: 'probe',
        tags: [],
        responses: { 200: { description: 'probe', schema: z.object({ a: z.string() }) } },
      },
      handler: (_req, res) => {
        res.json(body);
      },
    };
    const check = responseContract(row);
    expect(check).toBeDefined();
    const app = express();
    app.get(row.path, check!, row.handler);
    server = app.listen(0, '127.0.0.1');
    await new Promise((ok) => server.once('listening', ok));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}${row.path}`;
  });
  afterAll(async () => {
    watchResponses(undefined);
    await new Promise((ok) => server.close(ok));
  });

  const answer = async (value: unknown) => {
    body = value;
    await (await fetch(url)).text();
    return found.splice(0);
  };

  it('passes an answer its schema describes, on every request', async () => {
    expect(await answer({ a: 'ok' })).toEqual([]);
    expect(await answer({ a: 'again' })).toEqual([]);
  });

  it('names a body its schema refuses, and fields it does not describe, on each answer', async () => {
    const wrong = await answer({ a: 1 });
    expect(wrong).toMatchObject([{ route: 'GET /probe', status: 200 }]);
    const extra = await answer({ a: 'ok', extra: 1 });
    expect(extra).toMatchObject([{ route: 'GET /probe', status: 200 }]);
    expect(extra[0]!.problem).toContain('$.extra');
    expect(await answer({ a: 'fine' })).toEqual([]);
  });

  it('builds no check while no watcher is set', () => {
    watchResponses(undefined);
    try {
      expect(responseContract({ method: 'get', path: '/x' } as Route)).toBeUndefined();
    } finally {
      watchResponses((m) => found.push(m));
    }
  });
});
