import type { Request, Response } from 'express';
import { z } from 'zod';
import { invalidParameter } from '../../../errors.js';
import { AUDIT_ACTIONS } from '../../../model.js';
import type { AuditStore } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { wholeNumber } from './history.js';

const AuditQueryShape = {
  page: wholeNumber('page', 1, 1_000_000).default(1),
  limit: wholeNumber('limit', 1, 100).default(25),
  action: z.enum(AUDIT_ACTIONS, { error: `must be one of ${AUDIT_ACTIONS.join(', ')}` }).optional(),
  actor: z.string().min(1).max(64).optional(),
};
export const AuditQuerySchema = z.object(AuditQueryShape);

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
    responses: json200('A page of audit entries'),
  },
  handler: auditLog(ctx.store.audit),
});

/**
 * `GET /admin/audit`: who did what, newest first, paginated like the issuance history:
 * `{ data: [{ at, actor, action, target, reason? }], pagination: { page, limit, total } }`.
 */
export function auditLog(audit: AuditStore) {
  return async (req: Request, res: Response) => {
    const query = req.query as Record<string, unknown>;
    for (const name of Object.keys(query)) {
      if (!Object.hasOwn(AuditQueryShape, name)) throw invalidParameter(name, 'unknown parameter');
    }
    const q = parseInput(AuditQuerySchema, query, 'query');
    const { records, total } = await audit.list(q);
    res.json({
      data: records.map((r) => ({
        at: r.at.toISOString(),
        actor: r.actor,
        action: r.action,
        target: r.target,
        ...(r.reason === undefined ? {} : { reason: r.reason }),
      })),
      pagination: { page: q.page, limit: q.limit, total },
    });
  };
}
