import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

export const production: DoctorCheck = {
  items: ['production'],
  run: ({ config }) => [
    config.production
      ? line('production', 'PASS', 'NODE_ENV=production')
      : line('production', 'FAIL', `NODE_ENV=${config.nodeEnv}: not production`),
  ],
};
