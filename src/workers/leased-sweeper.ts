import { idleWaitMs } from './backing-off-look.js';
/**
 * The loop every background worker over a shared store runs (the upload outbox, webhook delivery,
 * bulk status jobs, renewal): a pass over the store every `everyMs`, because no other instance's
 * work reaches this one as an event; one pass at a time per process (a call during one joins it);
 * a wake during a pass asks for one more after it; a pass at a given time (a backoff, the next
 * retry due); and a stop that waits for the pass under way. What a pass does (which leases it
 * takes, what it logs and reports) is the worker's own `pass`.
 *
 * With `idleMaxMs` above `everyMs`, a sweeper left alone backs off: after `IDLE_AFTER` sweeps with
 * no call or wake from outside, each wait doubles up to `idleMaxMs`, and either brings it back to
 * `everyMs` at once. A timed pass (`runAt`: a retry, a lease running out) is the worker's own
 * timer for work it knows of, no sign of another instance's, and leaves the back-off as it is: a
 * busy tenant whose every sweep sees an upload in flight would otherwise never back off. Many idle
 * issuers in one process (docs/several-issuers.md "Idle tenants") then cost little; local work is
 * never late, and only another instance's leftovers wait up to `idleMaxMs`.
 *
 * `O` is what a call gives its pass (the first caller's, when calls join); `T` what a pass answers.
 */
export class LeasedSweeper<T = void, O = undefined> {
  /** Sweeps at `everyMs` with nothing from outside before the waits start doubling. */
  static readonly IDLE_AFTER = 3;
  private interval: NodeJS.Timeout | undefined;
  /** Sweeps since the last call or wake from outside (idle back-off only). */
  private quiet = 0;
  /** The wait of the sweep now scheduled (idle back-off only). */
  private waiting = 0;
  /** The sweep's own call is under way: it is no sign of work. */
  private ticking = false;
  private timer: NodeJS.Timeout | undefined;
  private timerAt: number | undefined;
  private current: Promise<T> | undefined;
  private again = false;
  private started = false;

  /** `tick`: what the interval calls (default: a pass with no options). */
  constructor(
    private readonly pass: (options: O | undefined) => Promise<T>,
    private readonly everyMs: number,
    private readonly tick: () => unknown = () => this.run(),
    private readonly idleMaxMs = everyMs,
  ) {}

  private get backsOff(): boolean {
    return this.idleMaxMs > this.everyMs;
  }

  /** Started and not stopped: passes run (a call before `start` or after `stop` still runs one). */
  get running(): boolean {
    return this.started;
  }

  /** The pass under way, if any. */
  get busy(): Promise<T> | undefined {
    return this.current;
  }

  /** Sweeps every `everyMs` from now on (the interval does not keep the process alive). */
  start(): void {
    this.started = true;
    if (this.backsOff) {
      if (!this.interval) this.schedule();
      return;
    }
    this.interval ??= setInterval(() => void this.tick(), Math.max(1, this.everyMs));
    this.interval.unref();
  }

  /** The next sweep of a sweeper that backs off: `everyMs`, doubling once it has been left alone. */
  private schedule(): void {
    this.waiting = idleWaitMs(this.quiet, LeasedSweeper.IDLE_AFTER, this.everyMs, this.idleMaxMs);
    this.interval = setTimeout(() => {
      this.interval = undefined;
      this.quiet++;
      this.onOwnTimer(() => this.tick());
      if (this.started) this.schedule();
    }, this.waiting);
    this.interval.unref();
  }

  /** What the sweeper's own timers start (a sweep's tick, a timed pass): no sign of work from outside. */
  private onOwnTimer(start: () => unknown): void {
    this.ticking = true;
    try {
      void start();
    } finally {
      this.ticking = false;
    }
  }

  /** Work from outside: a sweeper that backs off sweeps at `everyMs` again, from now. */
  private active(): void {
    if (!this.backsOff || this.ticking) return;
    this.quiet = 0;
    if (this.started && this.waiting > this.everyMs) {
      clearTimeout(this.interval);
      this.schedule();
    }
  }

  /** One pass; the pass under way, if any, is joined (and `options` left to it). */
  run(options?: O): Promise<T> {
    this.active();
    this.current ??= this.pass(options).finally(() => {
      this.current = undefined;
      if (this.again) {
        this.again = false;
        if (this.started) void this.run();
      }
    });
    return this.current;
  }

  /** A pass now, or one more after the pass under way; nothing once stopped. */
  wake(): void {
    if (!this.started) return;
    this.active();
    if (this.current) this.again = true;
    else void this.run();
  }

  /** A pass at `at` (at once when past); an earlier one already set stands. Nothing once stopped. */
  runAt(at: Date): void {
    if (!this.started) return;
    if (this.timer && this.timerAt !== undefined && this.timerAt <= at.getTime()) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at.getTime();
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = undefined;
        this.onOwnTimer(() => this.run());
      },
      Math.max(0, at.getTime() - Date.now()),
    );
    this.timer.unref();
  }

  /** No further passes; resolves once the pass under way has ended (its failure is its own to report). */
  async stop(): Promise<void> {
    this.started = false;
    // A timeout (backing off) or an interval: clearTimeout clears either.
    clearTimeout(this.interval);
    this.interval = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = undefined;
    await this.current?.catch(() => undefined);
  }
}
