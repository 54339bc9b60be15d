import { defineConfig } from 'vitest/config';

// `npm run test:container` (scripts/container/test-container.sh builds the image, then runs this):
// the image proven from outside, on real PostgreSQL and Redis. Not part of `npm test`.
export default defineConfig({
  test: {
    include: ['test/container/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 600_000,
    expect: { poll: { timeout: 120_000, interval: 100 } },
    pool: 'forks',
    fileParallelism: false,
  },
});
