import { resolve } from 'node:path';

/** Which engine a DATABASE_URL selects, and where. */
export type DatabaseTarget = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export const DEFAULT_DATABASE_URL = 'sqlite:./data/issuer.db';

/** Parses DATABASE_URL; a string result is the problem, worded for a config error line. */
export function parseDatabaseUrl(url: string, cwd: string): DatabaseTarget | string {
  if (url.startsWith('sqlite:')) {
    // sqlite:<path>; the URL-style sqlite://<relative> and sqlite:///<absolute> mean the same.
    const rest = url.slice('sqlite:'.length);
    const p = rest.startsWith('//') ? rest.slice(2) : rest;
    if (!p) return 'sqlite: needs a path, e.g. sqlite:./data/issuer.db';
    return { kind: 'sqlite', path: p === ':memory:' ? p : resolve(cwd, p) };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    try {
      new URL(url);
    } catch {
      return 'not a valid postgres:// URL';
    }
    return { kind: 'postgres', url };
  }
  return 'must be sqlite:<path> or postgres://user[:password]@host[:port]/database';
}

/** The URL without its password, for logs and the printable config. */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}
