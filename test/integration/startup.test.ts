import { describe, expect, it } from 'vitest';
import { bind } from '../../src/server.js';

// The start-up failures of src/main.ts as a process are in test/slow/startup.test.ts.
describe('start-up', () => {
  it('a request that arrives while the server is still starting gets 503, not silence', async () => {
    const bound = await bind(0, '127.0.0.1');
    const res = await fetch(`${bound.url}/.well-known/did.json`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    await res.body?.cancel();
    await new Promise((ok) => bound.server.close(ok));
  });
});
