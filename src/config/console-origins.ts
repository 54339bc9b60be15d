import type { Env } from './env.js';

/**
 * CONSOLE_ORIGIN, or its default: the origins a console request's `Origin` must be one of; one
 * problem line per given origin that is not one.
 */
export function readConsoleOrigins(
  env: Env,
  own: { publicOrigin: string; port: number; production: boolean },
  problems: string[],
): string[] {
  const { publicOrigin, port, production } = own;
  // docs/security.md "The admin console": the console's own origin comes from configuration; the
  // request's Host (which a DNS-rebound page chooses) never says what is same-origin.
  const loopback = (p: number) => [`http://localhost:${p}`, `http://127.0.0.1:${p}`, `http://[::1]:${p}`];
  const consoleOrigins =
    env.CONSOLE_ORIGIN !== undefined
      ? env.CONSOLE_ORIGIN.split(',').map((o) => o.trim())
      : env.ADMIN_PORT !== undefined
        ? loopback(env.ADMIN_PORT)
        : [publicOrigin, ...(production ? [] : loopback(port))];
  for (const origin of env.CONSOLE_ORIGIN === undefined ? [] : consoleOrigins) {
    const url = URL.canParse(origin) ? new URL(origin) : undefined;
    if (url?.origin !== origin || (url.protocol !== 'https:' && url.protocol !== 'http:'))
      problems.push(
        `CONSOLE_ORIGIN: ${JSON.stringify(origin)} is not an origin (http(s)://host[:port], no path, no trailing slash)`,
      );
  }
  return consoleOrigins;
}
