import { describe, expect, it } from 'vitest';
import type { AppContext } from '../../src/context.js';
import { Lifecycle } from '../../src/observability/lifecycle.js';
import { silentLogger } from '../../src/observability/logger.js';
import { HttpPools } from '../../src/outbound/http-json.js';
import { drain } from '../../src/server.js';

// docs/operations.md "Shutdown": when the grace runs out, a request still running is answered 503
// ("retry it"), and its Idempotency-Key claim is released so that the retry is not told 409.
describe('drain past its grace', () => {
  it('releases the unfinished requests’ claims before answering them 503', async () => {
    const lifecycle = new Lifecycle();
    const order: string[] = [];
    lifecycle.requestStarted();
    lifecycle.holdUntilDone(async () => {
      order.push('claim released');
    });
    lifecycle.onInterrupt(async () => {
      order.push('answered 503');
    });
    let closed = false;
    const ctx = {
      lifecycle,
      http: new HttpPools(),
      log: silentLogger(),
      close: async () => {
        closed = true;
      },
    } as unknown as AppContext;

    await drain(ctx, [], 0);

    expect(order).toEqual(['claim released', 'answered 503']);
    expect(closed).toBe(true);
  });
});
