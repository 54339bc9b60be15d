import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadCliSettings } from '../../../src/cli/settings.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

describe('admin CLI settings', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) removeDir(d);
  });
  const dir = () => {
    const d = tempDir();
    dirs.push(d);
    return d;
  };

  it('defaults to http://localhost:$PORT or 3000', () => {
    const cwd = dir();
    expect(loadCliSettings({}, {}, cwd).url).toBe('http://localhost:3000');
    expect(loadCliSettings({}, { PORT: '4000' }, cwd).url).toBe('http://localhost:4000');
    expect(loadCliSettings({}, { ISSUER_URL: 'https://issuer.example/' }, cwd).url).toBe(
      'https://issuer.example',
    );
    expect(loadCliSettings({ url: 'http://x:1' }, { ISSUER_URL: 'https://issuer.example' }, cwd).url).toBe(
      'http://x:1',
    );
  });

  it('reads ADMIN_API_KEY from the environment, then .env, then dev-secrets.json (not in production)', () => {
    const cwd = dir();
    mkdirSync(join(cwd, 'keys'));
    writeFileSync(join(cwd, 'keys', 'dev-secrets.json'), JSON.stringify({ adminApiKey: 'from-dev-secrets' }));
    expect(loadCliSettings({}, {}, cwd).adminApiKey).toBe('from-dev-secrets');
    expect(loadCliSettings({}, { NODE_ENV: 'production' }, cwd).adminApiKey).toBeUndefined();
    writeFileSync(join(cwd, '.env'), 'ADMIN_API_KEY=from-dotenv\nISSUER_URL=http://dotenv:1\n');
    expect(loadCliSettings({}, {}, cwd)).toMatchObject({
      adminApiKey: 'from-dotenv',
      url: 'http://dotenv:1',
    });
    expect(loadCliSettings({}, { ADMIN_API_KEY: 'from-env' }, cwd).adminApiKey).toBe('from-env');
  });
});
