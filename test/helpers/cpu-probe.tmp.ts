import { appendFileSync } from 'node:fs';
import { afterAll, expect } from 'vitest';

const start = process.cpuUsage();
const t0 = performance.now();
afterAll(() => {
  const u = process.cpuUsage(start);
  const file = expect.getState().testPath ?? 'unknown';
  appendFileSync(
    '/tmp/tests-cpu/cpu.log',
    `${Math.round((u.user + u.system) / 1000)}\t${Math.round(performance.now() - t0)}\t${file}\n`,
  );
});
