import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

/** ISSUER_ORIGIN is https; and a WARN when the documents are fetched from elsewhere (`--origin`). */
export const origin: DoctorCheck = {
  items: ['origin https', 'origin fetched'],
  run(ctx) {
    const configured = ctx.identity.origin;
    const lines: DoctorLine[] = [];
    if (configured.startsWith('https:'))
      lines.push(line('origin https', 'PASS', `ISSUER_ORIGIN ${configured}`));
    else
      lines.push(
        line(
          'origin https',
          ctx.allowHttp ? 'WARN' : 'FAIL',
          `ISSUER_ORIGIN ${configured} is not https${ctx.allowHttp ? ' (--allow-http)' : ''}`,
        ),
      );
    if (ctx.originGiven && ctx.origin !== configured)
      lines.push(
        line('origin fetched', 'WARN', `documents fetched from ${ctx.origin} (--origin), not ${configured}`),
      );
    return lines;
  },
};
