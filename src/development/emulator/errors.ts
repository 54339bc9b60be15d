import type { ErrorRequestHandler, Response } from 'express';

/**
 * Codes of the emulated hosting service. Kept apart from the kit's `AppError` on purpose: this is
 * the other side of the wire (it answers 401 `UNAUTHORIZED`, which the issuer itself never does).
 */
export type EmulatorErrorCode =
  | 'INVALID_PARAMETER'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'INTERNAL';

export class EmulatorError extends Error {
  readonly status: number;
  readonly code: EmulatorErrorCode;

  constructor(status: number, code: EmulatorErrorCode, message: string) {
    super(message);
    this.name = 'EmulatorError';
    this.status = status;
    this.code = code;
  }
}

export const invalidParameter = (field: string, message: string): EmulatorError =>
  new EmulatorError(400, 'INVALID_PARAMETER', `${field}: ${message}`);

export const unauthorized = (message: string): EmulatorError =>
  new EmulatorError(401, 'UNAUTHORIZED', message);

/** The code an injected fault answers with, so a fault of any status still reads like the service. */
export function codeForStatus(status: number): EmulatorErrorCode {
  switch (status) {
    case 400:
      return 'INVALID_PARAMETER';
    case 401:
      return 'UNAUTHORIZED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 409:
      return 'CONFLICT';
    case 413:
      return 'PAYLOAD_TOO_LARGE';
    case 429:
      return 'RATE_LIMITED';
    default:
      return 'INTERNAL';
  }
}

/**
 * Every response of the emulated routes goes through here, so the request log gets its status
 * before the client can see the answer (a `finish` listener could run after the client has
 * already asked for the log).
 */
export function send(res: Response, status: number, body: unknown): void {
  // The RequestLogEntry of this request (state.ts), typed by the one field set here.
  const entry = res.locals.requestLogEntry as { status: number } | undefined;
  if (entry) entry.status = status;
  res.status(status).json(body);
}

interface BodyParserError {
  type: string;
  status: number;
}

const isBodyParserError = (err: unknown): err is BodyParserError =>
  typeof err === 'object' &&
  err !== null &&
  typeof (err as { type?: unknown }).type === 'string' &&
  typeof (err as { status?: unknown }).status === 'number';

/** The router's own error handler: nothing under the emulator ever falls through as Express HTML. */
export const emulatorErrorHandler: ErrorRequestHandler = (err, _req, res, _next) => {
  if (err instanceof EmulatorError) {
    send(res, err.status, { code: err.code, message: err.message });
    return;
  }
  if (isBodyParserError(err)) {
    if (err.type === 'entity.too.large') {
      send(res, 413, { code: 'PAYLOAD_TOO_LARGE', message: 'body: larger than 1mb' });
      return;
    }
    if (err.status >= 400 && err.status < 500) {
      send(res, 400, { code: 'INVALID_PARAMETER', message: 'body: malformed JSON' });
      return;
    }
  }
  send(res, 500, { code: 'INTERNAL', message: 'internal error' });
};
