import type { EmulatedRoute } from './state.js';

export interface EmulatorFaults {
  /** The next `count` authenticated calls to `route` answer `status` (default 500) without effect. */
  failNext(route: EmulatedRoute, count: number, status?: number): void;
  clear(): void;
}

export class FaultInjector implements EmulatorFaults {
  readonly #pending = new Map<EmulatedRoute, { remaining: number; status: number }>();

  failNext(route: EmulatedRoute, count: number, status = 500): void {
    if (!Number.isInteger(count) || count < 0) throw new RangeError('count must be a non-negative integer');
    if (!Number.isInteger(status) || status < 400 || status > 599) {
      throw new RangeError('status must be an integer from 400 to 599');
    }
    if (count === 0) this.#pending.delete(route);
    else this.#pending.set(route, { remaining: count, status });
  }

  clear(): void {
    this.#pending.clear();
  }

  /** Consumes one injected failure for `route`, returning its status, if any is pending. */
  take(route: EmulatedRoute): number | undefined {
    const fault = this.#pending.get(route);
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.#pending.delete(route);
    return fault.status;
  }
}
