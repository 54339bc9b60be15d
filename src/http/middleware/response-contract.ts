import { isDeepStrictEqual } from 'node:util';
import type { RequestHandler, Response } from 'express';
import { z } from 'zod';
import { type DocumentedResponse, isJsonMedia, routeResponses } from '../routes/responses.js';
import type { Route } from '../routes/route.js';

/** An answer that its route's description does not allow (docs/operations.md "API contract and docs page"). */
export interface ResponseMismatch {
  /** `GET /statuslist/:partition`. */
  route: string;
  status: number;
  problem: string;
}

type Watcher = (mismatch: ResponseMismatch) => void;
let watcher: Watcher | undefined;

/**
 * The test suite's hook (test/helpers/setup.ts): while a watcher is set, every app built after
 * that checks each answer of its table routes against the route's documented responses (status,
 * media type, JSON body against its zod schema, no field the schema does not describe) and hands
 * the watcher every mismatch. Without one, apps carry no check at all.
 */
export function watchResponses(next: Watcher | undefined): void {
  watcher = next;
}

/** The check of one route's answers, or undefined while no watcher is set. */
export function responseContract(row: Route): RequestHandler | undefined {
  if (!watcher) return undefined;
  // Worked out at the route's first answer: the suite builds hundreds of apps, each answering on a
  // few of its routes.
  let answers: Map<number, DocumentedResponse> | undefined;
  const route = `${row.method.toUpperCase()} ${row.path}`;
  return (req, res, next) => {
    const chunks: Buffer[] = [];
    const collect = (chunk: unknown, encoding: unknown) => {
      if (typeof chunk === 'string')
        chunks.push(Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
      else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
    };
    const write = res.write;
    const end = res.end;
    // biome-ignore lint/suspicious/noExplicitAny: Node's overloads of write and end, passed on as given
    res.write = function (this: Response, ...args: any[]) {
      collect(args[0], args[1]);
      return write.apply(this, args as Parameters<typeof write>);
    } as typeof res.write;
    // biome-ignore lint/suspicious/noExplicitAny: as above
    res.end = function (this: Response, ...args: any[]) {
      collect(args[0], args[1]);
      let problem: string | undefined;
      try {
        answers ??= routeResponses(row);
        problem = mismatch(answers, res, req.method === 'HEAD' ? undefined : Buffer.concat(chunks));
      } catch (err) {
        problem = `the check failed: ${(err as Error).message}`;
      }
      if (problem) watcher?.({ route, status: res.statusCode, problem });
      return end.apply(this, args as Parameters<typeof end>);
    } as typeof res.end;
    next();
  };
}

function mismatch(
  answers: Map<number, DocumentedResponse>,
  res: Response,
  body: Buffer | undefined,
): string | undefined {
  const answer = answers.get(res.statusCode);
  if (!answer) return `status ${res.statusCode} is not documented`;
  if (body === undefined || body.length === 0) return undefined;
  const media = String(res.getHeader('content-type') ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (answer.contentTypes.length === 0) return `a ${media} body where none is documented`;
  if (!answer.contentTypes.includes(media))
    return `media type ${media} is not documented (${answer.contentTypes.join(', ')})`;
  if (!isJsonMedia(media)) return undefined;
  if (!answer.schema) return 'a JSON body without a schema';
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return 'the body is not JSON';
  }
  const parsed = answer.schema.safeParse(value);
  if (!parsed.success) return `${z.prettifyError(parsed.error)}\n  body: ${preview(value)}`;
  if (!isDeepStrictEqual(parsed.data, value))
    return `fields the schema does not describe: ${undescribed(value, parsed.data).join(', ')}\n  body: ${preview(value)}`;
  return undefined;
}

const preview = (value: unknown) => {
  const text = JSON.stringify(value);
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
};

/** The paths present in the answer that its parsed (stripped) form lost. */
function undescribed(value: unknown, parsed: unknown, path = '$'): string[] {
  if (Array.isArray(value) && Array.isArray(parsed))
    return value.flatMap((v, i) => undescribed(v, parsed[i], `${path}[${i}]`));
  if (value && typeof value === 'object' && parsed && typeof parsed === 'object') {
    return Object.entries(value).flatMap(([key, v]) =>
      Object.hasOwn(parsed, key)
        ? undescribed(v, (parsed as Record<string, unknown>)[key], `${path}.${key}`)
        : [`${path}.${key}`],
    );
  }
  return isDeepStrictEqual(value, parsed) ? [] : [`${path} (changed by the schema)`];
}
