import type { z } from 'zod';
import { AppError } from '../errors.js';

/** Parses a body or query with zod; the first problem becomes a 400 naming the field. */
export function parseInput<T>(schema: z.ZodType<T>, input: unknown, where: 'body' | 'query' = 'body'): T {
  const parsed = schema.safeParse(input ?? (where === 'body' ? undefined : {}));
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues;
  const first = issues[0]!;
  const field = first.path.length > 0 ? first.path.join('.') : where;
  const message = first.code === 'invalid_type' && first.input === undefined ? 'required' : first.message;
  throw new AppError(400, 'INVALID_PARAMETER', `${field}: ${message}`, {
    field,
    issues: issues.map((i) => ({ field: i.path.join('.') || where, message: i.message })),
  });
}
