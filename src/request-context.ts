import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request a piece of work belongs to, carried through async calls so the log lines of deep
 * parts carry `reqId` and our upstream calls pass the same `x-request-id` on (docs/operations.md).
 */
const scope = new AsyncLocalStorage<{ requestId: string }>();

export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return scope.run({ requestId }, fn);
}

export function currentRequestId(): string | undefined {
  return scope.getStore()?.requestId;
}

/** An incoming `x-request-id` is kept when it is 1 to 128 visible ASCII characters. */
export const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
