import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseInput } from '../../../../src/http/middleware/validate.js';
import { NonceSchema } from '../../../../src/http/routes/nonce.js';
import { expectAppError } from '../../../helpers/errors.js';

const Body = z.object({ name: z.string(), tags: z.array(z.string()), limit: z.number().int().optional() });

/** `parseInput` throws synchronously; as a promise for `expectAppError`. */
const parsing = (input: unknown, where?: 'body' | 'query') =>
  Promise.resolve().then(() => parseInput(Body, input, where));

// docs/interface.md "Errors": every route validates its input and answers 400 naming the field.
describe('parseInput', () => {
  it('returns the parsed value', () => {
    expect(parseInput(Body, { name: 'a', tags: [] })).toEqual({ name: 'a', tags: [] });
  });

  it('names the first field in details.field and every field in details.issues', async () => {
    const err = await expectAppError(
      parsing({ tags: ['x', 3], limit: 1.5 }),
      400,
      'INVALID_PARAMETER',
      'name',
    );
    const { issues } = err.details as { issues: Array<{ field: string; message: string }> };
    expect(issues.map((i) => i.field)).toEqual(['name', 'tags.1', 'limit']);
    // A missing field says so, rather than zod's type message.
    expect(issues[0]!.message).toBe('required');
  });

  it('a missing body is the field "body"; a missing query parses as an empty one', async () => {
    await expectAppError(parsing(undefined), 400, 'INVALID_PARAMETER', 'body');
    await expectAppError(parsing(null, 'query'), 400, 'INVALID_PARAMETER', 'name');
    expect(parseInput(z.object({ page: z.string().optional() }), undefined, 'query')).toEqual({});
  });

  it('a body of the wrong shape altogether is the field "body"', async () => {
    await expectAppError(parsing([1, 2]), 400, 'INVALID_PARAMETER', 'body');
  });
});

// docs/schemas-and-claims.md: revocation nonces.
describe('NonceSchema', () => {
  it.each([
    ['0', 0],
    ['42', 42],
    [42, 42],
    ['9007199254740991', 2 ** 53 - 1],
  ])('accepts %j as %d', (input, value) => {
    expect(NonceSchema.parse(input)).toBe(value);
  });

  it.each<unknown>([
    '',
    '-1',
    '1.5',
    '1e3',
    ' 1',
    '0x10',
    '99999999999999999',
    '9007199254740992',
    -1,
    1.5,
    2 ** 53,
    Number.NaN,
    true,
    null,
    {},
  ])('rejects %j', (input) => {
    expect(NonceSchema.safeParse(input).success).toBe(false);
  });
});
