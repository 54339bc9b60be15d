// Preloaded into the benched issuer (`node --import ./scripts/bench/loop-probe.mjs`) by
// scripts/bench/hosted.ts: what stalls the issuer's event loop during the measured window, to say
// what a hosted p99 is made of (docs/benchmarks.md "The tail"). The first SIGUSR2 starts the
// window (clears what the warm-up left); the second writes the window's figures as JSON to
// BENCH_LOOP_FILE. Nothing of the kit is changed: it only watches.
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks';

const file = process.env.BENCH_LOOP_FILE;
if (file) {
  // 1 ms: a timer every millisecond, whose lateness is how long the loop was held by one stretch
  // of synchronous work (or a GC pause) when it was due.
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  /** GC pauses of the window, in ms, by kind (minor = scavenge, major = mark-compact, …). */
  let pauses = [];
  let started = performance.now();
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauses.push({ ms: e.duration, kind: e.detail?.kind ?? 0 });
  });
  gc.observe({ entryTypes: ['gc'] });
  let signals = 0;
  process.on('SIGUSR2', () => {
    signals++;
    if (signals === 1) {
      delay.reset();
      pauses = [];
      started = performance.now();
      return;
    }
    const windowMs = performance.now() - started;
    const sorted = pauses.map((p) => p.ms).sort((a, b) => a - b);
    const pct = (p) =>
      sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0;
    // perf_hooks' gc kinds: 1 minor (scavenge), 2 major (mark-compact), 4 incremental, 8 weak callbacks.
    const byKind = {};
    for (const p of pauses) {
      const k = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weakcb' }[p.kind] ?? String(p.kind);
      byKind[k] ??= { count: 0, ms: 0, maxMs: 0 };
      byKind[k].count++;
      byKind[k].ms += p.ms;
      byKind[k].maxMs = Math.max(byKind[k].maxMs, p.ms);
    }
    // The histogram holds the time between the 1 ms timer's runs: its lateness is that less 1 ms.
    const ms = (ns) => Math.max(0, ns / 1e6 - 1);
    writeFileSync(
      file,
      JSON.stringify({
        windowMs,
        loopDelay: {
          p50: ms(delay.percentile(50)),
          p99: ms(delay.percentile(99)),
          p999: ms(delay.percentile(99.9)),
          max: ms(delay.max),
          mean: ms(delay.mean),
          samples: delay.count,
        },
        gc: {
          count: pauses.length,
          totalMs: sorted.reduce((a, b) => a + b, 0),
          p99Ms: pct(0.99),
          maxMs: sorted.at(-1) ?? 0,
          byKind,
        },
      }),
    );
  });
}
