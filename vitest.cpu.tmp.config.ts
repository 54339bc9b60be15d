import { defineConfig } from 'vitest/config';
export default defineConfig({
  test: {
    testTimeout: 120_000, hookTimeout: 120_000, pool: 'forks',
    expect: { poll: { timeout: 60_000, interval: 20 } },
    globalSetup: ['test/helpers/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false, setupFiles: ['test/helpers/cpu-probe.tmp.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'], isolate: false, setupFiles: ['test/helpers/setup.ts', 'test/helpers/cpu-probe.tmp.ts'] } },
    ],
  },
});
