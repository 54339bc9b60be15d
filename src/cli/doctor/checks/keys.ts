import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

/**
 * The local keys as the server reads them: files in KEYS_DIR, or the sealed rows where the engine
 * keeps keys in the database (docs/several-instances.md). Silent when they load: the documents
 * below compare them with what is served.
 */
export const keys: DoctorCheck = {
  items: ['keys'],
  async run(ctx) {
    const ring = await ctx.ring();
    return ring instanceof Error ? [line('keys', 'FAIL', ring.message)] : [];
  },
};
