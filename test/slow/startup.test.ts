import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bind } from '../../src/server.js';
import { entryArgs } from '../helpers/entry.js';
import { tempDir } from '../helpers/tmp.js';

async function runMain(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, entryArgs('src/main.ts'), {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr };
}

// docs/configuration.md: production refuses every development default, one line per problem naming
// the variable; each start-up failure names its subject. Each test starts src/main.ts as a process.
describe('start-up', () => {
  it('production without configuration exits non-zero naming each variable', async () => {
    const { code, stderr } = await runMain({ NODE_ENV: 'production', PORT: '0' });
    expect(code).toBe(1);
    for (const name of ['ISSUER_ORIGIN', 'API_KEY', 'ADMIN_API_KEY', 'PARTNER_ID', 'SERVICE_V1_BASE_URL']) {
      expect(stderr).toMatch(new RegExp(`^config: ${name}:`, 'm'));
    }
  });

  it('production refuses to generate keys, naming the folder', async () => {
    const dir = tempDir();
    const { code, stderr } = await runMain({
      NODE_ENV: 'production',
      PORT: '0',
      ISSUER_ORIGIN: 'https://issuer.example.com',
      API_KEY: 'q8Zr1VfN4yT0c+Lk7wXb2HdM9sJe5uPg3RnA6oYiQ1E=',
      ADMIN_API_KEY: 'Jd3Wm9Rk0tYv6BzXq2Lf8NsH1cGp5eUa7iOw4KrT0nM=',
      PARTNER_ID: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11',
      SERVICE_V1_BASE_URL: 'https://service.example.com/v1',
      KEYS_DIR: join(dir, 'keys'),
      DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
    });
    expect(code).toBe(1);
    expect(stderr).toContain(join(dir, 'keys'));
    expect(stderr).toContain('keys:generate');
    expect(stderr).not.toContain('a'.repeat(40));
  });

  it('a busy port is one line naming PORT and HOST', async () => {
    const bound = await bind(0, '127.0.0.1');
    try {
      const port = new URL(bound.url).port;
      const { code, stderr } = await runMain({
        PORT: port,
        HOST: '127.0.0.1',
        KEYS_DIR: join(tempDir(), 'k'),
      });
      expect(code).toBe(1);
      expect(stderr).toContain(`PORT ${port} is in use (HOST 127.0.0.1)`);
      expect(stderr).not.toMatch(/\n\s+at /);
    } finally {
      await new Promise((ok) => bound.server.close(ok));
    }
  });

  it('a corrupt dev-secrets.json is named with its path', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'keys'));
    writeFileSync(join(dir, 'keys', 'dev-secrets.json'), '{"apiKey": ');
    const { code, stderr } = await runMain({
      PORT: '0',
      KEYS_DIR: join(dir, 'keys'),
      DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
    });
    expect(code).toBe(1);
    expect(stderr).toContain(join(dir, 'keys', 'dev-secrets.json'));
  });

  it('a database that cannot be created names DATABASE_URL', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'not-a-dir'), '');
    const { code, stderr } = await runMain({
      PORT: '0',
      KEYS_DIR: join(dir, 'keys'),
      API_KEY: 'k'.repeat(32),
      ADMIN_API_KEY: 'j'.repeat(32),
      PARTNER_ID: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11',
      SERVICE_V1_BASE_URL: 'http://127.0.0.1:9/v1',
      DATABASE_URL: `sqlite:${join(dir, 'not-a-dir', 'db.sqlite')}`,
    });
    expect(code).toBe(1);
    expect(stderr).toContain('DATABASE_URL');
    expect(stderr).toContain(join(dir, 'not-a-dir', 'db.sqlite'));
  });
});
