import type { z } from 'zod';
import { AppError } from '../../errors.js';

/**
 * Parses a body or query with zod. Any problem is a 400 whose message names every field at fault
 * (the first also in `details.field`, all of them in `details.issues`).
 */
export function parseInput<T>(schema: z.ZodType<T>, input: unknown, where: 'body' | 'query' = 'body'): T {
  const parsed = schema.safeParse(input ?? (where === 'body' ? undefined : {}));
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.flatMap((i) =>
    // A strict object's unknown fields: each is named, as any other field at fault.
    i.code === 'unrecognized_keys'
      ? i.keys.map((key) => ({ field: [...i.path, key].join('.'), message: 'unknown field' }))
      : [
          {
            field: i.path.length > 0 ? i.path.join('.') : where,
            message: i.code === 'invalid_type' ? typeMessage(i.expected, valueAt(input, i.path)) : i.message,
          },
        ],
  );
  const message = issues
    .slice(0, 10)
    .map((i) => `${i.field}: ${i.message}`)
    .join('; ');
  throw new AppError('INVALID_PARAMETER', message, { field: issues[0]!.field, issues });
}

/**
 * zod 4 leaves the input out of its issues, so whether a field was missing or of the wrong JSON
 * type is read from the input itself: `holderDID: 0` is "expected a string", not "required".
 */
function typeMessage(expected: string, value: unknown): string {
  if (value === undefined) return 'required';
  const article = /^[aeiou]/.test(expected) ? 'an' : 'a';
  return `expected ${article} ${expected}, got ${jsonType(value)}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
