import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * Where the bench's processes run (docs/benchmarks.md "A fair bench"). With at least two CPUs
 * and `taskset` (util-linux), the issuer gets the first CPU this process may use, alone, and the
 * load generator (this process), the hosting-service emulator and the claims source the others:
 * the issuer's p99 then measures the issuer, not its neighbours. `BENCH_PIN=0` turns it off.
 */
export interface Pinning {
  /** The CPU list the issuer runs on (`taskset -c`), or undefined when not pinned. */
  issuer?: string;
  /** The CPU list of everything else the bench starts. */
  others?: string;
  /** One line saying what was done, or why not. */
  describe: string;
}

/** The CPUs this process may run on, from /proc (Linux), expanded: "0-2,4" → [0, 1, 2, 4]. */
function allowedCpus(): number[] {
  try {
    const line = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (!line) return [];
    return line.split(',').flatMap((part) => {
      const [a, b] = part.split('-').map(Number);
      if (b === undefined) return [a!];
      return Array.from({ length: b - a! + 1 }, (_, i) => a! + i);
    });
  } catch {
    return [];
  }
}

let decided: Pinning | undefined;

/**
 * Decides the pinning once, and moves this process (every thread, so its children inherit it) to
 * the load generator's CPUs.
 */
export function benchPinning(): Pinning {
  if (decided) return decided;
  decided = decide();
  return decided;
}

function decide(): Pinning {
  if (process.env.BENCH_PIN === '0') return { describe: 'not pinned: BENCH_PIN=0' };
  const cpus = allowedCpus();
  if (cpus.length < 2)
    return {
      describe: `not pinned: ${cpus.length === 0 ? 'the CPUs allowed are unknown (no /proc)' : 'one CPU only'}; the issuer shares it with the load generator, emulator and claims source`,
    };
  const probe = spawnSync('taskset', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0)
    return {
      describe: `not pinned: taskset (util-linux) is not installed; the issuer shares ${cpus.length} CPUs with the load generator, emulator and claims source`,
    };
  const issuer = String(cpus[0]);
  const others = cpus.slice(1).join(',');
  const moved = spawnSync('taskset', ['-a', '-p', '-c', others, String(process.pid)], { encoding: 'utf8' });
  if (moved.status !== 0)
    return { describe: `not pinned: taskset refused to move the bench (${moved.stderr.trim()})` };
  return {
    issuer,
    others,
    describe: `pinned: the issuer on CPU ${issuer} alone; load generator, emulator and claims source on CPU ${others}`,
  };
}

/** The command that starts `node args` on the issuer's CPUs (or plainly when not pinned). */
export function onIssuerCpus(args: string[]): { command: string; args: string[] } {
  const { issuer } = benchPinning();
  return issuer === undefined
    ? { command: process.execPath, args }
    : { command: 'taskset', args: ['-c', issuer, process.execPath, ...args] };
}
