import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LeasedSweeper } from '../../../src/workers/leased-sweeper.js';

// src/workers/leased-sweeper.ts: the idle back-off (docs/several-issuers.md "Idle tenants").
describe('LeasedSweeper idle back-off', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('without idleMaxMs sweeps every everyMs, as before', async () => {
    const passes: number[] = [];
    const start = Date.now();
    const sweeper = new LeasedSweeper(async () => void passes.push(Date.now()), 100);
    sweeper.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(passes.map((t) => t - start)).toEqual([100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
    await sweeper.stop();
  });

  it('left alone, doubles its wait after IDLE_AFTER sweeps up to idleMaxMs; a wake brings everyMs back', async () => {
    const passes: number[] = [];
    const start = Date.now();
    const sweeper = new LeasedSweeper(async () => void passes.push(Date.now()), 100, undefined, 800);
    sweeper.start();
    await vi.advanceTimersByTimeAsync(3500);
    // 100, 200, 300 at everyMs; then waits of 100·2^(n-3): 100, 200, 400, 800, 800, …
    expect(passes.map((t) => t - start)).toEqual([100, 200, 300, 400, 600, 1000, 1800, 2600, 3400]);
    passes.length = 0;
    const woke = Date.now();
    sweeper.wake();
    await vi.advanceTimersByTimeAsync(350);
    // The wake's own pass, then sweeps at everyMs from the wake.
    expect(passes.map((t) => t - woke)).toEqual([0, 100, 200, 300]);
    await sweeper.stop();
    passes.length = 0;
    await vi.advanceTimersByTimeAsync(2000);
    expect(passes).toEqual([]);
  });

  it('a timed pass (runAt) runs at its time and leaves the back-off as it is', async () => {
    const passes: number[] = [];
    const start = Date.now();
    const sweeper = new LeasedSweeper(async () => void passes.push(Date.now()), 100, undefined, 800);
    sweeper.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(passes.map((t) => t - start)).toEqual([100, 200, 300, 400, 600, 1000]);
    // Due at 1,100 (a retry, a lease running out): it runs then, and the sweeps go on doubling.
    sweeper.runAt(new Date(start + 1100));
    await vi.advanceTimersByTimeAsync(2500);
    expect(passes.map((t) => t - start)).toEqual([100, 200, 300, 400, 600, 1000, 1100, 1800, 2600, 3400]);
    await sweeper.stop();
  });

  it("the sweep's own call is no sign of work: a tick that calls run still backs off", async () => {
    let passes = 0;
    const sweeper: LeasedSweeper = new LeasedSweeper(
      async () => {
        passes++;
      },
      100,
      () => sweeper.run(),
      1600,
    );
    sweeper.start();
    await vi.advanceTimersByTimeAsync(10_000);
    // 3 at 100 ms, then 100, 200, 400, 800, then every 1600: far fewer than 100.
    expect(passes).toBeLessThan(15);
    await sweeper.stop();
  });
});
