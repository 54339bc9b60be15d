import express, { type Request, type RequestHandler } from 'express';
import { AppError } from '../../errors.js';

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

/** The default body limit (docs/interface.md "Field limits"); a route may set its own. */
export const LIMIT_BYTES = 100 * 1024;

/** The content types the short path reads (lower-cased); any other goes to express.json. */
const PLAIN_JSON = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
]);

/** An error shaped as body-parser's, so the error handler answers it the same way. */
const bodyError = (message: string, type: string) =>
  Object.assign(new Error(message), { status: 400, statusCode: 400, expose: true, type });

/**
 * The body of a plain JSON request: `application/json` (UTF-8), no content-encoding, a
 * content-length within the limit. It reads, decodes and parses as body-parser does (a UTF-8 BOM
 * dropped, only an object or array at the top, an empty body as `{}`), without its per-request
 * content-type parsing, decoder and stream helpers. Returns false for any other request.
 */
function readPlainJson(
  req: Request,
  limitBytes: number,
  done: (err: Error | undefined, body?: unknown) => void,
): boolean {
  const type = req.headers['content-type'];
  const length = req.headers['content-length'];
  if (type === undefined || length === undefined || req.headers['transfer-encoding'] !== undefined)
    return false;
  if (!PLAIN_JSON.has(type.toLowerCase())) return false;
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return false;
  const size = Number(length);
  if (!Number.isSafeInteger(size) || size <= 0 || size > limitBytes || !/^\d+$/.test(length)) return false;

  const chunks: Buffer[] = [];
  const onData = (chunk: Buffer) => chunks.push(chunk);
  const onAborted = () => finish(bodyError('request aborted', 'request.aborted'));
  const onEnd = () => {
    let text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.length === 0) {
      finish(undefined, {});
      return;
    }
    // Leading space other than JSON's makes JSON.parse fail below: the same 400 either way.
    const first = text.trimStart()[0];
    if (first !== '{' && first !== '[') {
      finish(bodyError('body is not a JSON object or array', 'entity.parse.failed'));
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      finish(bodyError((err as Error).message, 'entity.parse.failed'));
      return;
    }
    finish(undefined, body);
  };
  const finish = (err: Error | undefined, body?: unknown) => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('aborted', onAborted);
    req.off('error', onAborted);
    done(err, body);
  };
  req.on('data', onData);
  req.once('end', onEnd);
  req.once('aborted', onAborted);
  req.once('error', onAborted);
  return true;
}

/**
 * The JSON body parser of every POST route: express.json (100 kB, objects and arrays only), then
 * the nesting bound (a 5,000-deep body would overflow the stack: a 500), answered as a 400 naming the path.
 * A plain JSON request (the hosting service's every call) is read by `readPlainJson`; every other
 * (no length, another charset or type, compressed, too large) by express.json, as before.
 */
export function jsonBody(maxDepth = MAX_BODY_DEPTH, limitBytes = LIMIT_BYTES): RequestHandler {
  const parse = express.json({ limit: limitBytes, strict: true });
  return (req, res, next) => {
    const parsed = (err?: unknown) => {
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
    };
    const plain = readPlainJson(req, limitBytes, (err, body) => {
      if (err === undefined) req.body = body;
      parsed(err);
    });
    if (!plain) parse(req, res, parsed);
  };
}
