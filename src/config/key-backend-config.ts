import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, type Env, parseEnv } from './env.js';

// KEY_BACKEND and its PKCS11_* variables (docs/security.md "Keys in a hardware security module"):
// read by a start (`loadConfig`) and, alone, by the key commands.

export type KeyBackendConfig =
  | { kind: 'software' }
  | {
      kind: 'pkcs11';
      module: string;
      token: { label: string } | { slot: number };
      /**
       * PKCS11_PIN_FILE, when the PIN comes from a file: read again whenever the backend logs in
       * (docs/security.md "Keys in a hardware security module"). Its path only; the PIN is in `Secrets`.
       */
      pinFile?: string;
      /**
       * Put before the label of every key this process creates in the token: a tenant's id, so an
       * operator reading the token sees whose key each is (docs/several-issuers.md "Where the data lives").
       */
      labelPrefix?: string;
      /** PKCS11_MAX_SESSIONS: the most sessions the process opens on the token (default 32). */
      maxSessions?: number;
    };

/**
 * KEY_BACKEND and its PKCS11_* variables alone, for the key commands that run without a server
 * (`keys:generate`, `keys prepare`, `keys certificate`, `keys import-to-token`): the same lines as
 * a start, as a ConfigError.
 */
export function loadKeyBackendConfig(
  source: NodeJS.ProcessEnv,
  cwd = process.cwd(),
): { backend: KeyBackendConfig; pin: string | undefined } {
  const names = ['KEY_BACKEND', ...PKCS11_VARIABLES] as const;
  const parsed = parseEnv(Object.fromEntries(names.map((n) => [n, source[n]])));
  const problems = [...parsed.problems];
  const out = checkPkcs11(parsed.env, source, cwd, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return out;
}

const PKCS11_VARIABLES = [
  'PKCS11_MODULE',
  'PKCS11_TOKEN_LABEL',
  'PKCS11_SLOT',
  'PKCS11_PIN',
  'PKCS11_PIN_FILE',
  'PKCS11_MAX_SESSIONS',
] as const;

/**
 * KEY_BACKEND and its PKCS11_* variables, one problem line each; the PIN (a secret) is returned
 * apart and never put in a message.
 */
export function checkPkcs11(
  env: Env,
  source: NodeJS.ProcessEnv,
  cwd: string,
  problems: string[],
): { backend: KeyBackendConfig; pin: string | undefined } {
  if (env.KEY_BACKEND !== 'pkcs11') {
    for (const name of PKCS11_VARIABLES)
      if (source[name] !== undefined) problems.push(`${name}: only read with KEY_BACKEND=pkcs11`);
    return { backend: { kind: 'software' }, pin: undefined };
  }
  let module = '';
  if (env.PKCS11_MODULE === undefined) {
    if (source.PKCS11_MODULE === undefined)
      problems.push('PKCS11_MODULE: required with KEY_BACKEND=pkcs11 (the path of the PKCS#11 library)');
  } else {
    module = resolve(cwd, env.PKCS11_MODULE);
    if (!existsSync(module)) problems.push(`PKCS11_MODULE: no file at ${module}`);
  }
  let token: { label: string } | { slot: number } = { label: '' };
  if (env.PKCS11_TOKEN_LABEL !== undefined && env.PKCS11_SLOT !== undefined)
    problems.push('PKCS11_SLOT: give PKCS11_TOKEN_LABEL or PKCS11_SLOT, not both');
  else if (env.PKCS11_TOKEN_LABEL !== undefined) token = { label: env.PKCS11_TOKEN_LABEL };
  else if (env.PKCS11_SLOT !== undefined) token = { slot: env.PKCS11_SLOT };
  else if (source.PKCS11_TOKEN_LABEL === undefined && source.PKCS11_SLOT === undefined)
    problems.push('PKCS11_TOKEN_LABEL: required with KEY_BACKEND=pkcs11 (or PKCS11_SLOT)');
  let pin: string | undefined;
  let pinFile: string | undefined;
  if (env.PKCS11_PIN !== undefined && env.PKCS11_PIN_FILE !== undefined)
    problems.push('PKCS11_PIN_FILE: give PKCS11_PIN or PKCS11_PIN_FILE, not both');
  else if (env.PKCS11_PIN !== undefined) pin = env.PKCS11_PIN;
  else if (env.PKCS11_PIN_FILE !== undefined) {
    pinFile = resolve(cwd, env.PKCS11_PIN_FILE);
    try {
      pin = readPinFile(pinFile);
      if (!pin) problems.push(`PKCS11_PIN_FILE: ${pinFile} is empty`);
    } catch (err) {
      problems.push(
        `PKCS11_PIN_FILE: cannot read ${pinFile} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  } else if (source.PKCS11_PIN === undefined && source.PKCS11_PIN_FILE === undefined)
    problems.push('PKCS11_PIN: required with KEY_BACKEND=pkcs11 (or PKCS11_PIN_FILE)');
  const maxSessions = env.PKCS11_MAX_SESSIONS;
  return {
    backend: {
      kind: 'pkcs11',
      module,
      token,
      ...(pinFile === undefined ? {} : { pinFile }),
      ...(maxSessions === undefined ? {} : { maxSessions }),
    },
    pin,
  };
}

/** The PIN in a PKCS11_PIN_FILE: its first line, trimmed ('' when empty). */
export function readPinFile(file: string): string {
  return readFileSync(file, 'utf8').split(/\r?\n/)[0]?.trim() ?? '';
}
