import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

/**
 * The database as it is (the engine's `inspect`): present, writable, every migration applied
 * unchanged, and in production not one a development or test start created.
 */
export const database: DoctorCheck = {
  items: ['database'],
  async run(ctx) {
    const inspection = await ctx.database();
    if (inspection.problems.length > 0) return inspection.problems.map((p) => line('database', 'FAIL', p));
    const { where, environment } = inspection;
    if (ctx.config.production && environment !== undefined && environment !== 'production')
      return [line('database', 'FAIL', `DATABASE_URL: ${where} was created by a ${environment} start`)];
    return [
      line('database', 'PASS', `${where}: writable, ${inspection.migrations.length} migrations applied`),
    ];
  },
};
