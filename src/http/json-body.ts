import express, { type RequestHandler } from 'express';
import { AppError } from '../errors.js';

/**
 * How deep a request body may nest (objects and arrays). The deepest legitimate body is a
 * credential subject with nested claims and its disclosure frame: far below this. A deeper one
 * would overflow the stack of every recursive consumer after the parser (zod, @sd-jwt, jose).
 */
export const MAX_BODY_DEPTH = 32;

/** The first path (from the root) that nests deeper than `maxDepth`, or undefined. Iterative. */
export function tooDeepAt(value: unknown, maxDepth: number): string[] | undefined {
  const stack: Array<{ value: unknown; path: string[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (path.length >= maxDepth) return path;
    const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      if (child !== null && typeof child === 'object') stack.push({ value: child, path: [...path, key] });
    }
  }
  return undefined;
}

/**
 * The JSON body parser of every POST route: express.json (100 kB, objects and arrays only), then
 * the nesting bound (issue 12: a 5,000-deep body was a 500), answered as a 400 naming the path.
 */
export function jsonBody(maxDepth = MAX_BODY_DEPTH): RequestHandler {
  const parse = express.json({ limit: '100kb', strict: true });
  return (req, res, next) => {
    parse(req, res, (err?: unknown) => {
      if (err) {
        next(err);
        return;
      }
      const at = tooDeepAt(req.body, maxDepth);
      if (at === undefined) {
        next();
        return;
      }
      const field = at.join('.');
      next(
        new AppError('INVALID_PARAMETER', `${field}: nested deeper than ${maxDepth} levels`, {
          field,
        }),
      );
    });
  };
}
