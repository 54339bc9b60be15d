import { z } from 'zod';

/**
 * A revocation nonce is a non-negative integer below 2^53, written as a decimal string
 * (a JSON number is accepted on input too). Anything else is a 400 naming the field.
 */
export const NonceSchema = z
  .union([z.string().regex(/^\d{1,16}$/, 'must be a decimal integer'), z.number().int('must be an integer')])
  .transform((v) => Number(v))
  .refine((n) => Number.isSafeInteger(n) && n >= 0, 'must be a non-negative integer below 2^53');
