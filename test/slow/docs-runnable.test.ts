import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/architecture.md "Runnable documentation": every fenced block whose info string is
// `sh runnable` is run, in the order of its page, in a fresh working folder (a fresh SQLite
// database, keys, schemas and emulator); each must exit 0. `sh runnable background` starts a
// long-running command (the server): the next blocks run once it logs its `listening` line, with
// ISSUER_URL (or the variable the block names, `sh runnable background LOGIN_URL`) set to the
// address it bound, and it is stopped after the page's last block.

const ROOT = resolve('.');
const FENCE = /^```(\S*)([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm;

interface Block {
  line: number;
  code: string;
  background: boolean;
  /** The variable a background block's address is given to the next blocks in. */
  urlVariable: string;
}

function runnableBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  for (const m of markdown.matchAll(FENCE)) {
    const words = (m[2] ?? '').trim().split(/\s+/);
    if (m[1] !== 'sh' || !words.includes('runnable')) continue;
    const line = markdown.slice(0, m.index).split('\n').length;
    const urlVariable = words.find((w) => /^[A-Z][A-Z0-9_]*$/.test(w)) ?? 'ISSUER_URL';
    blocks.push({ line, code: m[3] ?? '', background: words.includes('background'), urlVariable });
  }
  return blocks;
}

const pages = ['README.md', ...readdirSync('docs').map((f) => `docs/${f}`)]
  .filter((f) => f.endsWith('.md'))
  .map((file) => ({ file, blocks: runnableBlocks(readFileSync(file, 'utf8')) }))
  .filter((p) => p.blocks.length > 0);

/** A working folder that behaves like a fresh checkout: the code linked, the data its own. */
function freshCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'issuer-kit-docs-'));
  for (const entry of ['package.json', 'node_modules', 'src', 'scripts', 'test', 'tsconfig.json', 'examples'])
    symlinkSync(join(ROOT, entry), join(dir, entry));
  cpSync(join(ROOT, 'schemas'), join(dir, 'schemas'), { recursive: true });
  return dir;
}

/** The environment of a new terminal: nothing of this test run's configuration. */
function shellEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', ...extra };
  env.npm_config_update_notifier = 'false';
  return env;
}

function run(
  block: Block,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', block.code], { cwd, env });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    child.on('error', fail);
    child.on('close', (code) => done({ code, output }));
  });
}

/** Starts a background block; resolves with the URL of its `listening` log line. */
function start(
  block: Block,
  cwd: string,
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; url: Promise<string> } {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', block.code], { cwd, env, detached: true });
  let output = '';
  const url = new Promise<string>((done, fail) => {
    child.stderr?.on('data', (d: Buffer) => (output += d));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      try {
        const entry = JSON.parse(line) as { event?: string; url?: string };
        if (entry.event === 'listening' && entry.url) done(entry.url);
      } catch {
        // not a log line
      }
    });
    child.on('exit', (code) => fail(new Error(`exited ${code} before listening:\n${output}`)));
  });
  return { child, url };
}

/** Stops a background block's whole process group (npm, its shell, the server) and waits for it. */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined)
    return Promise.resolve();
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  process.kill(-child.pid, 'SIGTERM');
  return exited;
}

describe.each(pages)('runnable blocks of $file', ({ file, blocks }) => {
  let cwd: string;
  const env: Record<string, string> = {};
  const background: ChildProcess[] = [];

  beforeAll(() => {
    cwd = freshCheckout();
  });

  afterAll(async () => {
    for (const child of background) await stop(child);
    rmSync(cwd, { recursive: true, force: true });
  });

  it.each(blocks)(`${file} line $line`, async (block) => {
    if (block.background) {
      const started = start(block, cwd, shellEnv(env));
      background.push(started.child);
      env[block.urlVariable] = await started.url;
      return;
    }
    const { code, output } = await run(block, cwd, shellEnv(env));
    expect({ code, output: code === 0 ? '' : output }).toEqual({ code: 0, output: '' });
  });
});
