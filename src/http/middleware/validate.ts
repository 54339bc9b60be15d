import type { z } from 'zod';
import { AppError } from '../../errors.js';

/**
 * Parses a body or query with zod. Any problem is a 400 whose message names every field at fault
 * (the first also in `details.field`, all of them in `details.issues`).
 */
export function parseInput<T>(schema: z.ZodType<T>, input: unknown, where: 'body' | 'query' = 'body'): T {
  const parsed = schema.safeParse(input ?? (where === 'body' ? undefined : {}));
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => ({
    field: i.path.length > 0 ? i.path.join('.') : where,
    message: i.code === 'invalid_type' && i.input === undefined ? 'required' : i.message,
  }));
  const message = issues
    .slice(0, 10)
    .map((i) => `${i.field}: ${i.message}`)
    .join('; ');
  throw new AppError('INVALID_PARAMETER', message, { field: issues[0]!.field, issues });
}
