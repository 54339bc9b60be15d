import { expect } from 'vitest';
import { AppError } from '../../src/errors.js';

/**
 * `details` as routes send it (docs/interface.md "Errors"): a 400 names the first field, and every field when
 * several fail; upstream errors say which call failed.
 */
export interface ErrorDetails {
  field?: string;
  issues?: Array<{ field: string; message: string }>;
  [key: string]: unknown;
}

/** The error body every route answers with (docs/interface.md "Errors"): `{ code, message, details? }`. */
export interface ErrorBody<D = ErrorDetails> {
  code: string;
  message: string;
  details?: D;
}

/**
 * Asserts an error response (docs/interface.md "Errors"): the status, a JSON body with the stable `code` and a
 * message, and `details.field` when `field` is given. Returns the body for further checks.
 */
export async function expectError<D extends object = ErrorDetails>(
  res: Response,
  status: number,
  code: string,
  field?: string,
): Promise<ErrorBody<D>> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  const body = (await res.json()) as ErrorBody<D>;
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe('string');
  if (field !== undefined) expect((body.details as ErrorDetails | undefined)?.field).toBe(field);
  return body;
}

/**
 * Asserts that a call inside the app failed with an `AppError` of this status and code (and
 * `details.field` when given): what the error handler would answer. Returns the error.
 */
export async function expectAppError(
  promise: Promise<unknown>,
  status: number,
  code: string,
  field?: string,
): Promise<AppError> {
  const err = await promise.then(
    () => expect.fail(`expected ${status} ${code}, but it succeeded`),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect(err).toMatchObject({ status, code });
  if (field !== undefined) expect((err as AppError).details).toMatchObject({ field });
  return err as AppError;
}
