import { randomInt } from 'node:crypto';

/** Status list slot allocation, shared by every store engine. */

// Random probes before falling back to a scan: at 99% full each probe hits a free slot with
// p = 0.01, so 64 probes succeed about half the time and cost well under the scan's worst case.
const PROBES = 64;

/**
 * Picks a uniformly random free slot of an allocation bitmap (1 bit per slot, same bit order), or
 * -1 when full. Random probes first (uniform among free slots); if they all miss, a scan from a
 * random start returns the first free slot after it, which slightly favours slots that follow long
 * allocated runs. `random(max)` returns an integer in [0, max); by default node:crypto's randomInt.
 */
export function pickFreeSlot(
  allocated: Uint8Array,
  size: number,
  random: (maxExclusive: number) => number = randomInt,
): number {
  if (!Number.isSafeInteger(size) || size <= 0 || size > allocated.length * 8) {
    throw new RangeError(`size must be a positive integer of at most ${allocated.length * 8}, got ${size}`);
  }
  // draft-ietf-oauth-status-list §12.5.1 and §12.4: random, non-sequential indices; §13.3: no
  // double allocation (the caller marks the slot in the same transaction).
  for (let probe = 0; probe < PROBES; probe++) {
    const slot = random(size);
    if ((allocated[slot >>> 3]! & (1 << (slot & 7))) === 0) return slot;
  }
  let slot = random(size);
  for (let visited = 0; visited < size; ) {
    const byte = allocated[slot >>> 3]!;
    if ((slot & 7) === 0 && byte === 0xff && slot + 8 <= size) {
      slot += 8;
      visited += 8;
    } else {
      if ((byte & (1 << (slot & 7))) === 0) return slot;
      slot++;
      visited++;
    }
    if (slot === size) slot = 0;
  }
  return -1;
}
