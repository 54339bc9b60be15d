import type { Request, Response } from 'express';
import { z } from 'zod';
import { invalidParameter } from '../../../errors.js';
import { AUDIT_ACTIONS } from '../../../model.js';
import type { AuditStore } from '../../../store/store.js';
import { Timestamp } from '../responses.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { DateBoundField } from './fields.js';
import {
  auditCursor,
  PaginationSchema,
  PagingShape,
  pagination,
  parsePagedQuery,
  readAuditCursor,
  requestedPage,
} from './paging.js';

const AuditQueryShape = {
  ...PagingShape,
  action: z.enum(AUDIT_ACTIONS, { error: `must be one of ${AUDIT_ACTIONS.join(', ')}` }).optional(),
  actor: z.string().min(1).max(64).optional(),
  /** At or after (a date is midnight UTC). */
  from: DateBoundField.optional(),
  /** Before. */
  to: DateBoundField.optional(),
};
export const AuditQuerySchema = z.object(AuditQueryShape);

export const AuditPageSchema = z.object({
  data: z.array(
    z.object({
      at: Timestamp,
      actor: z.string(),
      action: z.enum(AUDIT_ACTIONS),
      target: z.string(),
      reason: z.string().optional(),
      jobId: z.string().optional(),
    }),
  ),
  pagination: PaginationSchema,
});
export type AuditPage = z.infer<typeof AuditPageSchema>;

/** `GET /admin/audit`. */
export const auditRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/admin/audit',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-audit',
    summary: 'The audit log of admin changes',
    tags: TAGS.admin,
    query: AuditQuerySchema,
    responses: json200('A page of audit entries', AuditPageSchema),
  },
  handler: auditLog(ctx.store.audit),
});

/**
 * `GET /admin/audit`: who did what, newest first, paginated like the issuance history:
 * `{ data: [{ at, actor, action, target, reason?, jobId? }], pagination: { page, limit, total, nextCursor } }`.
 */
export function auditLog(audit: AuditStore) {
  return async (req: Request, res: Response) => {
    const { cursor, ...q } = parsePagedQuery(AuditQuerySchema, req.query as Record<string, unknown>);
    const after = cursor === undefined ? undefined : readAuditCursor(cursor);
    if (cursor !== undefined && after === undefined)
      throw invalidParameter('cursor', 'not a cursor of this route');
    const { page, total } = requestedPage({ ...q, cursor });
    const result = await audit.list({ ...q, page, after, total });
    const { records, next } = result;
    res.json({
      data: records.map((r) => ({
        at: r.at.toISOString(),
        actor: r.actor,
        action: r.action,
        target: r.target,
        ...(r.reason === undefined ? {} : { reason: r.reason }),
        // docs/admin-cli.md "Audit log": what a bulk job changed carries its id.
        ...(r.jobId === undefined ? {} : { jobId: r.jobId }),
      })),
      pagination: pagination(page, q.limit, next === null ? null : auditCursor(next), result.total),
    } satisfies AuditPage);
  };
}
