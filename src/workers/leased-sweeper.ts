/**
 * The loop every background worker over a shared store runs (the upload outbox, webhook delivery,
 * bulk status jobs, renewal): a pass over the store every `everyMs`, because no other instance's
 * work reaches this one as an event; one pass at a time per process (a call during one joins it);
 * a wake during a pass asks for one more after it; a pass at a given time (a backoff, the next
 * retry due); and a stop that waits for the pass under way. What a pass does (which leases it
 * takes, what it logs and reports) is the worker's own `pass`.
 *
 * `O` is what a call gives its pass (the first caller's, when calls join); `T` what a pass answers.
 */
export class LeasedSweeper<T = void, O = undefined> {
  private interval: NodeJS.Timeout | undefined;
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
  ) {}

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
    this.interval ??= setInterval(() => void this.tick(), Math.max(1, this.everyMs));
    this.interval.unref();
  }

  /** One pass; the pass under way, if any, is joined (and `options` left to it). */
  run(options?: O): Promise<T> {
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
        void this.run();
      },
      Math.max(0, at.getTime() - Date.now()),
    );
    this.timer.unref();
  }

  /** No further passes; resolves once the pass under way has ended (its failure is its own to report). */
  async stop(): Promise<void> {
    this.started = false;
    if (this.interval) clearInterval(this.interval);
    this.interval = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = undefined;
    await this.current?.catch(() => undefined);
  }
}
