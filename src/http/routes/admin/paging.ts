import { z } from 'zod';
import { invalidParameter } from '../../../errors.js';
import type { HistoryCursor } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';

/**
 * Paging query parameters shared by the admin history and audit routes (the webhook deliveries
 * route takes `cursor` and `limit` alone) (docs/interface.md
 * "Paging"): `cursor` (keyset, the default) or `page` (OFFSET, slower on big tables), `limit`
 * bounded so that one query stays small, `total` on request.
 */
export const wholeNumber = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`));

export const MAX_LIMIT = 100;

/** The `pagination` of a paged answer: `page` and `total` when asked for (docs/interface.md "Paging"). */
export const PaginationSchema = z.object({
  page: z.number().int().optional(),
  limit: z.number().int(),
  nextCursor: z.string().nullable(),
  total: z.number().int().optional(),
});

/**
 * Which page a history or audit read answers (docs/interface.md "Paging"): after a `cursor`, the
 * next keyset page, counted only with `total=true`; otherwise a numbered page, page 1 when no
 * `page` is given (the contract since the first release), counted unless `total=false`.
 */
export function requestedPage(q: {
  page?: number | undefined;
  cursor?: string | undefined;
  total?: boolean | undefined;
}): {
  page: number | undefined;
  total: boolean;
} {
  if (q.cursor !== undefined) return { page: undefined, total: q.total ?? false };
  return { page: q.page ?? 1, total: q.total ?? true };
}

/**
 * A paged route's query, read as docs/interface.md "Paging" says: a parameter the route does not
 * know is refused by name (not ignored), then the query is validated, and `cursor` goes without
 * `page`.
 */
export function parsePagedQuery<Q extends { cursor?: string | undefined; page?: number | undefined }>(
  schema: z.ZodObject & z.ZodType<Q>,
  query: Record<string, unknown>,
): Q {
  for (const name of Object.keys(query)) {
    if (!Object.hasOwn(schema.shape, name)) throw invalidParameter(name, 'unknown parameter');
  }
  const q = parseInput(schema, query, 'query');
  if (q.cursor !== undefined && q.page !== undefined) throw invalidParameter('cursor', 'not with page');
  return q;
}

/** A page's `pagination`: `page` and `total` only when the read was numbered or counted. */
export function pagination(
  page: number | undefined,
  limit: number,
  nextCursor: string | null,
  total: number | undefined,
): z.infer<typeof PaginationSchema> {
  return {
    ...(page === undefined ? {} : { page }),
    limit,
    nextCursor,
    ...(total === undefined ? {} : { total }),
  };
}

export const PagingShape = {
  page: wholeNumber('page', 1, 1_000_000).optional(),
  cursor: z.string().min(1).max(200).optional(),
  limit: wholeNumber('limit', 1, MAX_LIMIT).default(25),
  total: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .transform((v) => v === 'true')
    .optional(),
};

// A cursor is opaque to clients: base64url of a tagged sort key, so that one route's cursor, or
// one read in the other order, is refused rather than misread.
const encode = (text: string) => Buffer.from(text).toString('base64url');
// Only the exact encoding of a cursor: Buffer ignores stray characters and bits.
const decode = (cursor: string) => {
  const text = Buffer.from(cursor, 'base64url').toString();
  return encode(text) === cursor ? text : '';
};

const ID = /^[1-9]\d{0,15}$/;

export function historyCursor(key: HistoryCursor, order: 'createdAt_desc' | 'createdAt_asc'): string {
  return encode(`h.${order === 'createdAt_asc' ? 'a' : 'd'}.${key.createdAt.getTime()}.${key.id}`);
}

/** The sort key in `cursor`, or undefined when it is not a history cursor of this order. */
export function readHistoryCursor(
  cursor: string,
  order: 'createdAt_desc' | 'createdAt_asc',
): HistoryCursor | undefined {
  const [tag, dir, ms, id, ...extra] = decode(cursor).split('.');
  if (tag !== 'h' || dir !== (order === 'createdAt_asc' ? 'a' : 'd') || extra.length > 0) return undefined;
  if (!ms || !/^\d{1,15}$/.test(ms) || !id || !ID.test(id)) return undefined;
  const createdAt = new Date(Number(ms));
  if (Number.isNaN(createdAt.getTime()) || !Number.isSafeInteger(Number(id))) return undefined;
  return { createdAt, id: Number(id) };
}

export const auditCursor = (id: number): string => encode(`a.${id}`);

/** A webhook endpoint's deliveries: the event sequence the next page starts below. */
export const deliveryCursor = (seq: number): string => encode(`w.${seq}`);

export function readDeliveryCursor(cursor: string): number | undefined {
  const [tag, seq, ...extra] = decode(cursor).split('.');
  if (tag !== 'w' || !seq || !ID.test(seq) || extra.length > 0 || !Number.isSafeInteger(Number(seq))) {
    return undefined;
  }
  return Number(seq);
}

export function readAuditCursor(cursor: string): number | undefined {
  const [tag, id, ...extra] = decode(cursor).split('.');
  if (tag !== 'a' || !id || !ID.test(id) || extra.length > 0 || !Number.isSafeInteger(Number(id))) {
    return undefined;
  }
  return Number(id);
}
