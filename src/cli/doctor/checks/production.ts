import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

const insecure = 'insecure upstream';

/**
 * NODE_ENV=production; and in production, ALLOW_INSECURE_UPSTREAM=1 with an http
 * SERVICE_V1_BASE_URL is a WARN (docs/configuration.md: a staging sidecar's setting, under which
 * partner JWTs and envelopes go over plain http), as the start-up log warns.
 */
export const production: DoctorCheck = {
  items: ['production', insecure],
  run: ({ config }) => {
    const lines: DoctorLine[] = [
      config.production
        ? line('production', 'PASS', 'NODE_ENV=production')
        : line('production', 'FAIL', `NODE_ENV=${config.nodeEnv}: not production`),
    ];
    if (config.production && config.insecureUpstream && config.serviceBaseUrl?.startsWith('http:'))
      lines.push(
        line(
          insecure,
          'WARN',
          `ALLOW_INSECURE_UPSTREAM=1: partner JWTs and envelopes go over plain http to SERVICE_V1_BASE_URL ${config.serviceBaseUrl}; for a staging sidecar only: give an https URL and unset it`,
        ),
      );
    return lines;
  },
};
