import type { Request, Response } from 'express';
import { z } from 'zod';
import type { UploadOutbox } from '../../../issuance/outbox.js';
import type { AuditStore } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { auditActor, ReasonField } from './fields.js';

// Exactly one of: a credential id, or every failed upload.
export const RetryUploadsBodySchema = z.union(
  [
    z.strictObject({ credentialId: z.string().min(1).max(255), reason: ReasonField }),
    z.strictObject({ allFailed: z.literal(true), reason: ReasonField }),
  ],
  { error: 'give credentialId, or allFailed: true' },
);
export type RetryUploadsBody = z.infer<typeof RetryUploadsBodySchema>;

/** `POST /admin/uploads/retry`. */
export const retryUploadsRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/uploads/retry',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-uploads-retry',
    summary: 'Queue failed uploads again (one credential, or every failed upload)',
    tags: TAGS.admin,
    body: RetryUploadsBodySchema,
    responses: json200(
      '`{ retried: [credentialId] }` (an id that is not a failed upload is left out)',
      z.object({ retried: z.array(z.string()) }),
    ),
  },
  handler: retryUploads(ctx.outbox, ctx.store.audit),
});

/**
 * `POST /admin/uploads/retry` (kit extension): puts `failed` uploads back in the outbox
 * queue with a fresh attempt budget. Answers `{ retried: [credentialId…] }`; an id that is not
 * `failed` (unknown, pending, uploaded) is not in the list.
 */
export function retryUploads(outbox: Pick<UploadOutbox, 'retryFailed'>, audit: AuditStore) {
  return async (req: Request, res: Response) => {
    const body = parseInput(RetryUploadsBodySchema, req.body);
    const retried = await outbox.retryFailed('credentialId' in body ? [body.credentialId] : 'all');
    const actor = auditActor(res, body.reason);
    const at = new Date();
    for (const credentialId of retried)
      await audit.record({ ...actor, at, action: 'uploads.retry', target: credentialId });
    res.json({ retried });
  };
}
