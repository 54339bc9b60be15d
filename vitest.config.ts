import { defineConfig } from 'vitest/config';

// Three projects. `unit` (test/unit, mirrors src/) and `integration` (the real app and emulator
// in the test's own process, on loopback ports) are the inner loop, `npm run test:fast`. `slow`
// (test/slow) holds what starts other processes (src/main.ts, the CLI, cluster workers, a
// browser), runs several processes on one database, loops at volume or checks the Iden3 fast
// paths against the libraries; `npm test` runs all three.
// `isolate: false` in every project: a worker's files share one module graph instead of each
// importing the app and the Iden3 libraries again (~2.5 s a file here). So a test file leaves no
// global state behind: it closes what it starts (servers, processes, browsers) and restores real
// timers.
// Three workers, also on two cores (vitest's default there is one): most of a file's time is spent
// waiting on the processes it started, a browser, a database or a lease running out, and the other
// workers use it. A whole run takes about 270 s of CPU (user and system, its child processes
// included; PostgreSQL's own not counted) and took 337-367 s on two quiet cores with two workers:
// the cores were idle about half of the time.
// No test depends on the machine being idle: a test waits for the event it needs (a log line, a
// process exit, `expect.poll` on a state), never for a fixed time, and asserts no durations. The
// timeouts below only end a test that hangs, so they are generous: a loaded 2-core machine runs
// a process-spawning test ten times slower than an idle one.
export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // expect.poll waits for a state another part reaches on its own time; 1 s (vitest's default)
    // is too short on a busy machine.
    expect: { poll: { timeout: 60_000, interval: 20 } },
    // Transformed modules are kept on disk between runs (node_modules/.experimental-vitest-cache,
    // keyed by each file's content and the config), so a run transforms only what changed: about
    // 1.5 s of CPU less a run of one file here, more for a whole run of two projects.
    experimental: { fsModuleCache: true },
    pool: 'forks',
    maxWorkers: 3,
    // The run's temporary PostgreSQL databases are dropped together when it ends.
    globalSetup: ['test/helpers/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          isolate: false,
          setupFiles: ['test/helpers/setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'slow',
          include: ['test/slow/**/*.test.ts'],
          isolate: false,
          setupFiles: ['test/helpers/setup.ts'],
          testTimeout: 600_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
