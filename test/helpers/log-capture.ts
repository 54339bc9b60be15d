import type { Logger } from '../../src/model.js';
import { createLogger } from '../../src/observability/logger.js';

/** The real logger (redaction included) writing every line into `lines`. */
export function capturingLogger(): {
  log: Logger;
  lines: string[];
  records: () => Record<string, unknown>[];
} {
  const lines: string[] = [];
  const log = createLogger({ level: 'trace', format: 'json' }, { write: (line: string) => lines.push(line) });
  return { log, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}
