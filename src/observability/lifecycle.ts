/**
 * The serving state of one process: start-up recovery, in-flight requests, and the drain that a
 * SIGTERM/SIGINT starts (readiness turns 503 at once; unfinished work can be undone).
 */
export class Lifecycle {
  /** Start-up recovery is done (the outbox has made every pending upload due and resumed). */
  recovered = false;
  /** A shutdown began: readiness answers 503 and new requests are refused. */
  draining = false;
  #active = 0;
  #idle: (() => void)[] = [];
  readonly #undo = new Set<() => Promise<void>>();
  readonly #interrupts = new Set<() => Promise<void>>();

  get inFlight(): number {
    return this.#active;
  }

  requestStarted(): void {
    this.#active++;
  }

  requestEnded(): void {
    this.#active--;
    if (this.#active === 0) for (const resolve of this.#idle.splice(0)) resolve();
  }

  /** Resolves true once no request is in flight, false when `timeoutMs` passes first. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.#active === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#idle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /**
   * Registers what to undo if the process stops before this piece of work finishes (e.g. release
   * an Idempotency-Key claim); call the returned function when it finished.
   */
  holdUntilDone(undo: () => Promise<void>): () => void {
    this.#undo.add(undo);
    return () => {
      this.#undo.delete(undo);
    };
  }

  /**
   * Registers how to answer an unfinished request when the drain's grace runs out (a 503 rather
   * than a reset connection); call the returned function when the request ended.
   */
  onInterrupt(answer: () => Promise<void>): () => void {
    this.#interrupts.add(answer);
    return () => {
      this.#interrupts.delete(answer);
    };
  }

  /** The drain's grace ran out: answers every request still in flight. Resolves with their count. */
  async interrupt(): Promise<number> {
    const pending = [...this.#interrupts];
    this.#interrupts.clear();
    await Promise.allSettled(pending.map((answer) => answer()));
    return pending.length;
  }

  /** The drain's grace ran out: undoes every unfinished piece of work. */
  async abandon(): Promise<number> {
    const pending = [...this.#undo];
    this.#undo.clear();
    await Promise.allSettled(pending.map((undo) => undo()));
    return pending.length;
  }
}
