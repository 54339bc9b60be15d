import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Row } from './issuance.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..');
const RUNS = 10;

/** Median wall time of `command args` run to its end from the repository (after one warm-up run). */
function medianMs(command: string, args: string[]): number {
  const times: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const t = performance.now();
    const run = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8' });
    if (run.status !== 0)
      throw new Error(`${command} ${args.join(' ')} exited with ${run.status}: ${run.stderr}`);
    if (i > 0) times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/**
 * How long the admin CLI takes to start and answer `--version`, as an operator types it (through
 * npm) and as node runs it, each the median of 10 runs after a warm-up (which also builds the
 * compiled JavaScript when the sources changed).
 */
export async function benchCliStart(): Promise<Row[]> {
  return [
    {
      name: 'admin CLI start',
      value: medianMs('npm', ['run', '--silent', 'admin', '--', '--version']),
      unit: 'ms',
    },
    {
      name: 'admin CLI start without npm (node scripts/launch.mjs)',
      value: medianMs(process.execPath, ['scripts/launch.mjs', 'scripts/admin.ts', '--version']),
      unit: 'ms',
    },
    { name: 'node alone (node -e 0)', value: medianMs(process.execPath, ['-e', '0']), unit: 'ms' },
  ];
}
