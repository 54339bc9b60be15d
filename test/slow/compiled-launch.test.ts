import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeDir } from '../helpers/tmp.js';

const ROOT = resolve('.');

/** A checkout of its own (the sources copied, node_modules linked), so edits touch nothing of ours. */
function checkout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'issuer-kit-build-'));
  for (const entry of ['src', 'scripts', 'package.json', 'tsconfig.json'])
    cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

function admin(dir: string, ...args: string[]) {
  const run = spawnSync(process.execPath, ['scripts/launch.mjs', 'scripts/admin.ts', ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const builds = (dir: string) => readdirSync(join(dir, 'dist')).filter((f) => !f.startsWith('.'));

// docs/architecture.md "Compiled JavaScript": the commands run compiled JavaScript, built when
// missing, and never a build of other sources than the ones in the folder.
describe('scripts/launch.mjs', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) removeDir(d);
  });

  it('builds on the first run, reuses the build, and builds again when a source or package.json changes', () => {
    const dir = checkout();
    dirs.push(dir);
    const first = admin(dir, '--version');
    expect(first).toMatchObject({ code: 0, stdout: '0.1.0\n' });
    expect(builds(dir)).toHaveLength(1);
    const [built] = builds(dir);
    // The compiled entry, not the TypeScript: the build holds JavaScript beside its sources' layout.
    expect(readFileSync(join(dir, 'dist', built!, 'scripts', 'admin.js'), 'utf8')).toContain('runAdminCli');

    expect(admin(dir, '--version')).toMatchObject({ code: 0, stdout: '0.1.0\n' });
    expect(builds(dir)).toEqual([built]);

    // An edited source runs as edited.
    appendFileSync(join(dir, 'scripts', 'admin.ts'), "\nconsole.error('edited after the first build');\n");
    const edited = admin(dir, '--version');
    expect(edited.code).toBe(0);
    expect(edited.stderr).toContain('edited after the first build');
    expect(builds(dir)).toHaveLength(2);

    // package.json (the version the CLI prints) is an input too.
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...pkg, version: '9.9.9' }));
    expect(admin(dir, '--version')).toMatchObject({ code: 0, stdout: '9.9.9\n' });
    // The three newest builds are kept.
    expect(builds(dir)).toHaveLength(3);
    appendFileSync(join(dir, 'src', 'model.ts'), '\n// one more edit\n');
    expect(admin(dir, '--version').code).toBe(0);
    expect(builds(dir)).toHaveLength(3);
  });

  it('a syntax error stops the command and leaves no build', () => {
    const dir = checkout();
    dirs.push(dir);
    appendFileSync(join(dir, 'scripts', 'admin.ts'), '\nexport const x = (;\n');
    const broken = admin(dir, '--version');
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toMatch(/admin\.ts/);
    expect(existsBuild(dir)).toBe(false);
  });
});

function existsBuild(dir: string): boolean {
  try {
    return builds(dir).length > 0;
  } catch {
    return false;
  }
}
