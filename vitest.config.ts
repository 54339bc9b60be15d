import { defineConfig } from 'vitest/config';

// Three projects: `unit` (test/unit, mirrors src/), `integration` (the real app and emulator on
// loopback ports), `slow` (library-equivalence checks of the Iden3 fast paths, several processes
// on one database). `npm test` runs all three; `npm run test:fast` leaves out `slow`.
// `isolate: false` in unit and integration: their files share one module graph per worker instead
// of each importing the app and the Iden3 libraries again (~2.5 s a file here). So a test file
// leaves no global state behind: it closes what it starts and restores real timers.
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
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
      { extends: true, test: { name: 'slow', include: ['test/slow/**/*.test.ts'] } },
    ],
  },
});
