import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { entryArgs } from '../helpers/entry.js';
import { expectError } from '../helpers/errors.js';
import { removeDir, tempDir } from '../helpers/tmp.js';

interface Run {
  /** 0 also when the SIGTERM that `untilListening` sends arrives before the handler is installed. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Spawns `src/main.ts` (or another script); when `untilListening`, waits for the listening line,
 * stops it with SIGTERM and returns what it printed.
 */
async function run(
  script: string,
  env: Record<string, string>,
  untilListening = false,
  args: string[] = [],
): Promise<Run> {
  const child = spawn(process.execPath, entryArgs(script, ...args), {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
    if (untilListening && /issuer-kit listening on/.test(stdout)) child.kill('SIGTERM');
  });
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  return { code: untilListening && signal === 'SIGTERM' ? 0 : code, stdout, stderr };
}

const dir = tempDir();
afterAll(() => removeDir(dir));
const keysDir = join(dir, 'keys');
const dataDir = join(dir, 'data');
const devDb = join(dataDir, 'issuer.db');
const common = { PORT: '0', KEYS_DIR: keysDir };
const production = {
  ...common,
  NODE_ENV: 'production',
  ISSUER_ORIGIN: 'https://issuer.example.com',
  // Random-looking: production refuses low-entropy secrets.
  API_KEY: 'q8Zr1VfN4yT0c+Lk7wXb2HdM9sJe5uPg3RnA6oYiQ1E=',
  ADMIN_API_KEY: 'Jd3Wm9Rk0tYv6BzXq2Lf8NsH1cGp5eUa7iOw4KrT0nM=',
  PARTNER_ID: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11',
  SERVICE_V1_BASE_URL: 'https://service.example.com/v1',
};

// Going live in the checkout where the demo ran.
describe('production refuses development state', () => {
  it('a development start marks its keys, secrets and database, all owner-only', async () => {
    const dev = await run('src/main.ts', { ...common, DATABASE_URL: `sqlite:${devDb}` }, true);
    expect(dev.code).toBe(0);
    const devSecrets = JSON.parse(readFileSync(join(keysDir, 'dev-secrets.json'), 'utf8'));
    expect(devSecrets.environment).toBe('development');
    // .env.example: the generated keys stay in the file, never in the output.
    for (const secret of [devSecrets.apiKey, devSecrets.adminApiKey])
      expect(dev.stdout + dev.stderr).not.toContain(secret);
    for (const name of readdirSync(keysDir).filter((f) => f.endsWith('.json'))) {
      if (name === 'dev-emulator.json') continue;
      expect(JSON.parse(readFileSync(join(keysDir, name), 'utf8')).environment, name).toBe('development');
      expect(statSync(join(keysDir, name)).mode & 0o777, name).toBe(0o600);
    }
    // The credential request encryption key its OpenID4VCI metadata publishes.
    expect(statSync(join(keysDir, 'dev-request-encryption.pem')).mode & 0o777).toBe(0o600);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    for (const f of readdirSync(dataDir)) expect(statSync(join(dataDir, f)).mode & 0o777, f).toBe(0o600);
    const db = new Database(devDb, { readonly: true });
    expect(db.prepare("SELECT value FROM meta WHERE key = 'environment'").get()).toEqual({
      value: 'development',
    });
    db.close();
  });

  it('production refuses the development keys and secrets, naming each file and the command', async () => {
    const devSecrets = JSON.parse(readFileSync(join(keysDir, 'dev-secrets.json'), 'utf8'));
    const prod = await run('src/main.ts', {
      ...production,
      API_KEY: devSecrets.apiKey,
      DATABASE_URL: `sqlite:${join(dir, 'fresh.db')}`,
    });
    expect(prod.code).toBe(1);
    expect(prod.stderr).toMatch(/^start-up: .*credential-signing-.*\.json: a development key/m);
    expect(prod.stderr).toMatch(/^start-up: .*partner-jwt-.*\.json: a development key/m);
    expect(prod.stderr).toContain('NODE_ENV=production npm run keys:generate');
    expect(prod.stderr).toMatch(/^start-up: API_KEY: is the development value from .*dev-secrets\.json/m);
    expect(prod.stderr).not.toContain(devSecrets.apiKey);
  });

  it('production keys:generate never keeps a development key: it moves them aside and creates new ones', async () => {
    // What else development leaves in KEYS_DIR: the development CA, and the emulator's URL file
    // that a development start killed without its shutdown leaves behind.
    const chain = await run(
      'scripts/keys-generate.ts',
      { ...common, ISSUER_ORIGIN: 'http://localhost:3000' },
      false,
      ['--x5c'],
    );
    expect(chain.code).toBe(0);
    writeFileSync(join(keysDir, 'dev-emulator.json'), '{"url":"http://127.0.0.1:1"}\n');
    const developmentFiles = [
      'dev-secrets.json',
      'dev-emulator.json',
      'dev-ca.json',
      'dev-ca.pem',
      'dev-request-encryption.pem',
    ];
    for (const name of developmentFiles) expect(existsSync(join(keysDir, name)), name).toBe(true);

    const gen = await run('scripts/keys-generate.ts', { ...common, NODE_ENV: 'production' });
    expect(gen.code).toBe(0);
    expect(gen.stdout).not.toContain('keeping');
    expect(gen.stdout).toMatch(/^credential-signing: moved development key .* aside; created /m);
    for (const name of readdirSync(keysDir).filter((f) => /^(credential-signing|partner-jwt)-/.test(f)))
      expect(JSON.parse(readFileSync(join(keysDir, name), 'utf8')).environment).toBe('production');
    for (const name of developmentFiles) {
      expect(existsSync(join(keysDir, name)), name).toBe(false);
      expect(existsSync(join(keysDir, 'development', name)), name).toBe(true);
    }
    // Nothing marked development is left in KEYS_DIR itself.
    for (const name of readdirSync(keysDir).filter((f) => f.endsWith('.json')))
      expect(JSON.parse(readFileSync(join(keysDir, name), 'utf8')).environment, name).toBe('production');
  });

  it('production still refuses the development secrets moved aside', async () => {
    const devSecrets = JSON.parse(readFileSync(join(keysDir, 'development', 'dev-secrets.json'), 'utf8'));
    const prod = await run('src/main.ts', {
      ...production,
      ADMIN_API_KEY: devSecrets.adminApiKey,
      DATABASE_URL: `sqlite:${join(dir, 'fresh.db')}`,
    });
    expect(prod.code).toBe(1);
    expect(prod.stderr).toMatch(
      /^start-up: ADMIN_API_KEY: is the development value from .*development\/dev-secrets\.json/m,
    );
  });

  it('a development start on the production keys says how to go on with the development database, and that works', async () => {
    const dev = await run('src/main.ts', { ...common, DATABASE_URL: `sqlite:${devDb}` });
    expect(dev.code).toBe(1);
    const aside = join(keysDir, 'development');
    expect(dev.stderr).toMatch(
      /^start-up: .*iden3-bjj\.json: this key is not the key of the Iden3 identity/m,
    );
    expect(dev.stderr).toContain(`KEYS_DIR=${aside}`);
    const recovered = await run(
      'src/main.ts',
      { ...common, KEYS_DIR: aside, DATABASE_URL: `sqlite:${devDb}` },
      true,
    );
    expect(recovered.stderr).toBe('');
    expect(recovered.code).toBe(0);
  });

  it('production refuses the development database, naming DATABASE_URL', async () => {
    const prod = await run('src/main.ts', { ...production, DATABASE_URL: `sqlite:${devDb}` });
    expect(prod.code).toBe(1);
    expect(prod.stderr).toMatch(/^start-up: DATABASE_URL: .* was created by a development start/m);
  });

  it('production refuses a database holding the seeded example claims, even without the marker', async () => {
    const copy = join(dir, 'legacy.db');
    const db = new Database(devDb);
    await db.backup(copy);
    db.close();
    const legacy = new Database(copy);
    legacy.exec("DELETE FROM meta WHERE key = 'environment'");
    legacy.close();
    const prod = await run('src/main.ts', { ...production, DATABASE_URL: `sqlite:${copy}` });
    expect(prod.code).toBe(1);
    expect(prod.stderr).toMatch(/^start-up: DATABASE_URL: .* holds the example claims .*demo-user-1/m);
  });

  it('production starts on production keys and a new database, which remembers it', async () => {
    const fresh = join(dir, 'production.db');
    const prod = await run('src/main.ts', { ...production, DATABASE_URL: `sqlite:${fresh}` }, true);
    expect(prod.stderr).toBe('');
    expect(prod.code).toBe(0);
    const db = new Database(fresh, { readonly: true });
    expect(db.prepare("SELECT value FROM meta WHERE key = 'environment'").get()).toEqual({
      value: 'production',
    });
    db.close();
  });
});

// docs/operations.md "Webhooks": production takes only https endpoints on public addresses.
describe('webhook endpoints in production', () => {
  it('refuses http, loopback, private and link-local endpoint URLs with 400 naming url, and takes a public https one', async () => {
    const child = spawn(process.execPath, entryArgs('src/main.ts'), {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...production,
        DATABASE_URL: `sqlite:${join(dir, 'webhooks-production.db')}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stdout = '';
      child.stdout.setEncoding('utf8');
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (c: string) => {
          stdout += c;
          const m = /issuer-kit listening on (\S+)/.exec(stdout);
          if (m) resolve(m[1]!);
        });
        child.once('exit', (code) => reject(new Error(`exited with ${code} before listening`)));
      });
      const add = (body: unknown) =>
        fetch(`${url}/admin/webhooks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-admin-api-key': production.ADMIN_API_KEY },
          body: JSON.stringify(body),
        });
      for (const bad of [
        'http://hooks.example.com/in',
        'https://127.0.0.1/in',
        'https://localhost/in',
        'https://10.1.2.3/in',
        'https://192.168.0.10/in',
        'https://169.254.169.254/latest',
        'https://[::1]/in',
        'https://[fd00::1]/in',
        'not a url',
      ]) {
        await expectError(await add({ url: bad, events: ['*'] }), 400, 'INVALID_PARAMETER', 'url');
      }
      await expectError(
        await add({ url: 'https://hooks.example.com/in', events: ['credential.nope'] }),
        400,
        'INVALID_PARAMETER',
        'events.0',
      );
      const ok = await add({ url: 'https://hooks.example.com/in', events: ['credential.issued'] });
      expect(ok.status).toBe(201);
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
  });
});

describe('configuration in one pass', () => {
  it('lists every bad variable and every schema problem of every file in one run', async () => {
    const schemas = join(dir, 'bad-schemas');
    mkdirSync(schemas);
    writeFileSync(join(schemas, 'a.json'), '{ not json');
    writeFileSync(join(schemas, 'b.json'), JSON.stringify({ schemaId: 'b' }));
    const out = await run('src/main.ts', {
      NODE_ENV: 'production',
      PORT: '0',
      PARTNER_ID: 'not-a-uuid',
      SCHEMAS_DIR: schemas,
    });
    expect(out.code).toBe(1);
    const lines = out.stderr.trim().split('\n');
    for (const name of ['PARTNER_ID', 'ISSUER_ORIGIN', 'API_KEY', 'ADMIN_API_KEY', 'SERVICE_V1_BASE_URL'])
      expect(
        lines.some((l) => l.startsWith(`config: ${name}:`)),
        name,
      ).toBe(true);
    expect(lines.some((l) => l.includes('a.json: not valid JSON'))).toBe(true);
    expect(lines.filter((l) => l.includes('b.json:')).length).toBeGreaterThan(1);
  });
});
