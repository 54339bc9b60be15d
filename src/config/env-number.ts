import { z } from 'zod';

/** A whole-number variable between `min` and `max`, its messages naming the variable. */
export const int = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(
      z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`),
    );
