import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BackingOffLook } from '../../../src/workers/backing-off-look.js';

// src/workers/backing-off-look.ts: a tenant's webhook look (docs/several-issuers.md "Idle tenants").
describe('BackingOffLook', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A look that records when it ran and answers what `answers` says next (default: nothing found). */
  const recorder = (answers: Array<boolean | undefined> = []) => {
    const at: number[] = [];
    const look = async () => {
      at.push(Date.now());
      return answers.length ? answers.shift() : false;
    };
    return { at, look };
  };

  it('with maxMs at everyMs looks every everyMs, whatever it finds', async () => {
    const { at, look } = recorder();
    const start = Date.now();
    const looker = new BackingOffLook(look, 100, 100, 3);
    looker.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(at.map((t) => t - start)).toEqual([100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
    looker.stop();
    await vi.advanceTimersByTimeAsync(1000);
    expect(at).toHaveLength(10);
  });

  it('finding nothing, doubles its wait after quietAfter looks up to maxMs; a find brings everyMs back', async () => {
    const answers: Array<boolean | undefined> = Array(8).fill(false);
    const { at, look } = recorder(answers);
    const start = Date.now();
    const looker = new BackingOffLook(look, 100, 800, 3);
    looker.start();
    await vi.advanceTimersByTimeAsync(3400);
    // 100, 200, 300 at everyMs; then waits of 100·2^(n-3): 100, 200, 400, 800, 800, …
    expect(at.map((t) => t - start)).toEqual([100, 200, 300, 400, 600, 1000, 1800, 2600, 3400]);
    expect(looker.waitMs).toBe(800);
    // The next look finds something: the one after comes everyMs later, and the count starts again.
    answers.push(true);
    at.length = 0;
    const found = Date.now();
    await vi.advanceTimersByTimeAsync(800 + 400);
    expect(at.map((t) => t - found)).toEqual([800, 900, 1000, 1100, 1200]);
    looker.stop();
  });

  it('a look that did not look (undefined) neither resets nor counts; one that throws counts as nothing found', async () => {
    const answers: Array<boolean | undefined> = [
      undefined,
      undefined,
      undefined,
      undefined,
      false,
      false,
      false,
    ];
    const { look } = recorder(answers);
    const looker = new BackingOffLook(look, 100, 800, 3);
    looker.start();
    await vi.advanceTimersByTimeAsync(700);
    // 4 that did not look, 3 that found nothing: still at everyMs.
    expect(looker.waitMs).toBe(100);
    looker.stop();
    const failing = new BackingOffLook(
      async () => {
        throw new Error('database away');
      },
      100,
      800,
      0,
    );
    failing.start();
    await vi.advanceTimersByTimeAsync(100 + 200 + 400);
    expect(failing.waitMs).toBe(800);
    failing.stop();
  });
});

describe('BackingOffLook.soon', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('brings a backed-off look within everyMs, once, and leaves the back-off as it was', async () => {
    const at: number[] = [];
    let found = false;
    const looker = new BackingOffLook(
      async () => {
        at.push(Date.now());
        return found;
      },
      100,
      800,
      0,
    );
    looker.start();
    // Nothing found in waits of 100, 200, 400, 800: backed off to 800, the next look at 2300.
    await vi.advanceTimersByTimeAsync(1500);
    expect(looker.waitMs).toBe(800);
    at.length = 0;
    found = true;
    const asked = Date.now();
    await vi.advanceTimersByTimeAsync(50);
    looker.soon();
    await vi.advanceTimersByTimeAsync(100);
    // The asked look ran 100 after soon(); it found something, but the back-off stands.
    expect(at.map((t) => t - asked)).toEqual([150]);
    expect(looker.waitMs).toBe(800);
    await vi.advanceTimersByTimeAsync(800);
    expect(at.map((t) => t - asked)).toEqual([150, 950]);
    // A look of the back-off that finds something brings everyMs back.
    expect(looker.waitMs).toBe(100);
    looker.stop();
  });

  it('asked during a look, the next look comes within everyMs of its end', async () => {
    const at: number[] = [];
    let hold = false;
    let release: (() => void) | undefined;
    const looker = new BackingOffLook(
      async () => {
        at.push(Date.now());
        if (hold) await new Promise<void>((r) => (release = r));
        return false;
      },
      100,
      800,
      0,
    );
    looker.start();
    await vi.advanceTimersByTimeAsync(1500);
    expect(looker.waitMs).toBe(800);
    at.length = 0;
    hold = true;
    const start = Date.now();
    await vi.advanceTimersByTimeAsync(800);
    expect(at).toHaveLength(1);
    hold = false;
    looker.soon();
    release?.();
    await vi.advanceTimersByTimeAsync(100);
    expect(at.map((t) => t - start)).toEqual([800, 900]);
    looker.stop();
  });
});
