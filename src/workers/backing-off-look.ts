/**
 * The wait of a loop left alone (a LeasedSweeper's sweeps, a BackingOffLook's looks): `everyMs`
 * for the first `quietAfter` quiet rounds, then doubling with each one, up to `maxMs`.
 */
export function idleWaitMs(quiet: number, quietAfter: number, everyMs: number, maxMs: number): number {
  const doublings = Math.min(30, Math.max(0, quiet - quietAfter));
  return Math.min(Math.max(maxMs, everyMs), Math.max(1, everyMs) * 2 ** doublings);
}

/**
 * A look repeated every `everyMs` (a cheap read for work to do, such as the webhook worker's look
 * for new events) that backs off while it finds nothing: after `quietAfter` looks in a row that
 * find nothing, each wait doubles up to `maxMs`; a look that finds something brings it back to
 * `everyMs`. With `maxMs` at `everyMs` it never backs off. `soon()` asks for one look within
 * `everyMs` (after a change that may have left work), which leaves the back-off as it is. One look
 * at a time: the next wait starts when a look has answered. A look that throws finds nothing.
 */
export class BackingOffLook {
  private timer: NodeJS.Timeout | undefined;
  /** When the scheduled look runs (ms since the epoch). */
  private dueAt = 0;
  private quiet = 0;
  private running = false;
  private looking = false;
  /** The scheduled look was asked for by `soon()`: what it finds leaves the back-off as it is. */
  private asked = false;
  /** `soon()` came during a look: the next one is asked for. */
  private again = false;

  /** `look` answers whether it found something; undefined: it did not look (neither). */
  constructor(
    private readonly look: () => Promise<boolean | undefined>,
    private readonly everyMs: number,
    private readonly maxMs: number,
    private readonly quietAfter: number,
  ) {}

  /** The wait of a look scheduled now, by the back-off. */
  get waitMs(): number {
    return Math.max(1, idleWaitMs(this.quiet, this.quietAfter, this.everyMs, this.maxMs));
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(this.waitMs, false);
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** A look within `everyMs` from now (none sooner is scheduled, and none is under way). */
  soon(): void {
    if (!this.running) return;
    if (this.looking) this.again = true;
    else if (this.dueAt > Date.now() + this.everyMs) this.schedule(this.everyMs, true);
  }

  private schedule(waitMs: number, asked: boolean): void {
    clearTimeout(this.timer);
    this.asked = asked;
    this.dueAt = Date.now() + waitMs;
    this.timer = setTimeout(() => void this.once(), waitMs);
    this.timer.unref();
  }

  private async once(): Promise<void> {
    const asked = this.asked;
    this.looking = true;
    let found: boolean | undefined;
    try {
      found = await this.look();
    } catch {
      found = false;
    } finally {
      this.looking = false;
    }
    if (!asked) {
      if (found === true) this.quiet = 0;
      else if (found === false) this.quiet++;
    }
    const again = this.again;
    this.again = false;
    if (this.running) this.schedule(again ? Math.min(this.everyMs, this.waitMs) : this.waitMs, again);
  }
}
