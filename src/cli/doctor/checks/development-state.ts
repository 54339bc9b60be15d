import { developmentStateProblems } from '../../../development/production-guard.js';
import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

/** What a development start left behind that production must not use (the start refuses the same). */
export const developmentState: DoctorCheck = {
  items: ['development state'],
  async run({ config, secrets }) {
    const problems = await developmentStateProblems(config, secrets);
    if (problems.length === 0)
      return [line('development state', 'PASS', 'no development key or secret in use')];
    return problems.map((p) => line('development state', 'FAIL', p));
  },
};
