import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

/** ISSUER_ORIGIN is https; and a WARN when the documents are fetched from elsewhere (`--origin`). */
export const origin: DoctorCheck = {
  items: ['origin https', 'origin fetched'],
  run(ctx) {
    const { issuerOrigin } = ctx.config;
    const lines: DoctorLine[] = [];
    if (issuerOrigin.startsWith('https:'))
      lines.push(line('origin https', 'PASS', `ISSUER_ORIGIN ${issuerOrigin}`));
    else
      lines.push(
        line(
          'origin https',
          ctx.allowHttp ? 'WARN' : 'FAIL',
          `ISSUER_ORIGIN ${issuerOrigin} is not https${ctx.allowHttp ? ' (--allow-http)' : ''}`,
        ),
      );
    if (ctx.originGiven && ctx.origin !== issuerOrigin)
      lines.push(
        line(
          'origin fetched',
          'WARN',
          `documents fetched from ${ctx.origin} (--origin), not ${issuerOrigin}`,
        ),
      );
    return lines;
  },
};
