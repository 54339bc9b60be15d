import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { ConfigError } from '../../../src/config/env.js';

const dir = mkdtempSync(join(tmpdir(), 'issuer-kit-pkcs11-config-'));
const module = join(dir, 'libtoken.so');
writeFileSync(module, '');
const PIN = '918273';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ NODE_ENV: 'test', ...env }, dir);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

// docs/security.md "Keys in a hardware security module": every problem one line, the PIN never in one.
describe('KEY_BACKEND and PKCS11_* configuration', () => {
  it('software is the default, and PKCS11_* without KEY_BACKEND=pkcs11 is named', () => {
    expect(loadConfig({ NODE_ENV: 'test' }, dir).config.keyBackend).toEqual({ kind: 'software' });
    expect(problems({ PKCS11_MODULE: module, PKCS11_PIN: PIN })).toEqual([
      'PKCS11_MODULE: only read with KEY_BACKEND=pkcs11',
      'PKCS11_PIN: only read with KEY_BACKEND=pkcs11',
    ]);
  });

  it('pkcs11 with a label and a PIN: the PIN is a secret, off the config', () => {
    const { config, secrets } = loadConfig(
      {
        NODE_ENV: 'test',
        KEY_BACKEND: 'pkcs11',
        PKCS11_MODULE: module,
        PKCS11_TOKEN_LABEL: 'issuer',
        PKCS11_PIN: PIN,
      },
      dir,
    );
    expect(config.keyBackend).toEqual({ kind: 'pkcs11', module, token: { label: 'issuer' } });
    expect(JSON.stringify(config)).not.toContain(PIN);
    expect(secrets.pkcs11Pin).toBe(PIN);
  });

  it('a slot instead of a label, and the PIN from a file (its first line)', () => {
    const pinFile = join(dir, 'pin');
    writeFileSync(pinFile, `${PIN}\n`);
    const { config, secrets } = loadConfig(
      {
        NODE_ENV: 'test',
        KEY_BACKEND: 'pkcs11',
        PKCS11_MODULE: module,
        PKCS11_SLOT: '3',
        PKCS11_PIN_FILE: pinFile,
      },
      dir,
    );
    // The file's path (not its PIN) stays in the config: the backend reads it again at each login.
    expect(config.keyBackend).toEqual({ kind: 'pkcs11', module, token: { slot: 3 }, pinFile });
    expect(JSON.stringify(config)).not.toContain(PIN);
    expect(secrets.pkcs11Pin).toBe(PIN);
  });

  it('each problem is one line naming the variable, never the PIN', () => {
    expect(problems({ KEY_BACKEND: 'pkcs11' })).toEqual([
      'PKCS11_MODULE: required with KEY_BACKEND=pkcs11 (the path of the PKCS#11 library)',
      'PKCS11_TOKEN_LABEL: required with KEY_BACKEND=pkcs11 (or PKCS11_SLOT)',
      'PKCS11_PIN: required with KEY_BACKEND=pkcs11 (or PKCS11_PIN_FILE)',
    ]);
    const both = problems({
      KEY_BACKEND: 'pkcs11',
      PKCS11_MODULE: join(dir, 'missing.so'),
      PKCS11_TOKEN_LABEL: 'a',
      PKCS11_SLOT: '1',
      PKCS11_PIN: PIN,
      PKCS11_PIN_FILE: join(dir, 'pin'),
    });
    expect(both).toEqual([
      `PKCS11_MODULE: no file at ${join(dir, 'missing.so')}`,
      'PKCS11_SLOT: give PKCS11_TOKEN_LABEL or PKCS11_SLOT, not both',
      'PKCS11_PIN_FILE: give PKCS11_PIN or PKCS11_PIN_FILE, not both',
    ]);
    expect(both.join('\n')).not.toContain(PIN);
    expect(problems({ KEY_BACKEND: 'hsm' })).toEqual(['KEY_BACKEND: KEY_BACKEND must be software or pkcs11']);
    const empty = join(dir, 'empty-pin');
    writeFileSync(empty, '\n');
    expect(
      problems({
        KEY_BACKEND: 'pkcs11',
        PKCS11_MODULE: module,
        PKCS11_TOKEN_LABEL: 'a',
        PKCS11_PIN_FILE: empty,
      }),
    ).toEqual([`PKCS11_PIN_FILE: ${empty} is empty`]);
  });
});
