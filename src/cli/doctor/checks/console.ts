import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

/**
 * CONSOLE=on in production: the admin console is listed, so that a deployment knows a browser
 * can sign in with an admin key (docs/operations.md "The admin console"). It should answer on the
 * ADMIN_PORT listener, where the admin routes are, not on the public one.
 */
export const consoleCheck: DoctorCheck = {
  items: ['console'],
  run: ({ config }) => {
    if (!config.production || !config.console.enabled) return [];
    const { idleSeconds, absoluteSeconds } = config.console;
    const sessions = `sessions end after ${idleSeconds} s idle or ${absoluteSeconds} s`;
    return [
      config.admin
        ? line(
            'console',
            'PASS',
            `CONSOLE=on: /console on the admin listener ${config.admin.host}:${config.admin.port}; ${sessions}`,
          )
        : line(
            'console',
            'WARN',
            `CONSOLE=on without ADMIN_PORT: /console answers on the public listener (set ADMIN_PORT to keep it, with the admin routes, off the public network); ${sessions}`,
          ),
    ];
  },
};
