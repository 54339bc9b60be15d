import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { createInterface } from 'node:readline';
import { entryArgs } from './entry.js';

/** `src/main.ts` as a real process, its JSON log lines read as they come. */
export interface MainProcess {
  proc: ChildProcess;
  /** The listening URL its `listening` line names. */
  url: string;
  lines: Record<string, unknown>[];
  /** The exit code, once the process ended and every line it wrote was read. */
  exit: Promise<number | null>;
  /** The first line with this event after line `from`; rejects if the process ends first. */
  waitFor(event: string, from?: number): Promise<Record<string, unknown>>;
  /** The first `count` lines with this event after line `from`, once there are that many. */
  waitForAll(event: string, from: number, count: number): Promise<Record<string, unknown>[]>;
}

/**
 * Starts `src/main.ts` (development, a free port, JSON logs) with `env` added, and resolves once
 * it is listening. Tests wait on its log lines (events), never on time.
 */
export async function startMainProcess(env: Record<string, string>): Promise<MainProcess> {
  const proc = spawn(process.execPath, entryArgs('src/main.ts'), {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      NODE_ENV: 'development',
      PORT: '0',
      LOG_FORMAT: 'json',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Record<string, unknown>[] = [];
  const seen = new EventEmitter();
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    // Cluster workers share the pipe: a line that is not one JSON record is not a log line.
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    lines.push(record);
    seen.emit('line');
  });
  // 'close' comes after stdout ended, so every line is in `lines` by then.
  const exit = once(proc, 'close').then(([code]) => code as number | null);
  const ended = exit.then((code) => {
    throw new Error(`the server exited with ${code}`);
  });
  ended.catch(() => undefined);
  const waitForAll = async (event: string, from: number, count: number) => {
    for (;;) {
      const found = lines.slice(from).filter((l) => l.event === event);
      if (found.length >= count) return found.slice(0, count);
      await Promise.race([once(seen, 'line'), ended]);
    }
  };
  const waitFor = async (event: string, from = 0) => (await waitForAll(event, from, 1))[0]!;
  const listening = await waitFor('listening');
  return { proc, url: String(listening.url), lines, exit, waitFor, waitForAll };
}
