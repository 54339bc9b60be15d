import { Writable } from 'node:stream';
import { runAdminCli } from '../../src/cli/admin-cli.js';
import type { CliIo } from '../../src/cli/output.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `npm run admin -- <args>` in process: the real CLI entry with its output captured line by line
 * (progress bars discarded). It sees `NODE_ENV=test` plus `env`, nothing of this process's
 * environment, and runs in `cwd`. Its stdout is not a terminal unless `options.tty`.
 */
export async function runCli(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  options: { tty?: boolean } = {},
): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const line = (text: string) => (text.endsWith('\n') ? text : `${text}\n`);
  const io: CliIo = {
    out: (text) => (stdout += line(text)),
    err: (text) => (stderr += line(text)),
    errStream: new Writable({ write: (_c, _e, done) => done() }),
    errIsTTY: false,
    // `tty`: the command believes its stdout is a terminal (the QR code of `offer` is drawn only there).
    outIsTTY: options.tty === true,
  };
  const code = await runAdminCli(
    [process.execPath, 'scripts/admin.ts', ...args],
    io,
    { NODE_ENV: 'test', ...env },
    cwd,
  );
  return { code, stdout, stderr };
}
