import type { Request, Response } from 'express';
import { z } from 'zod';
import type { RenewalService } from '../../../issuance/renewal.js';
import type { StatusService } from '../../../status/status-service.js';
import { parseInput } from '../../middleware/validate.js';
import { Timestamp } from '../responses.js';
import type { RouteFactory } from '../route.js';
import { TAGS } from '../route.js';
import { auditActor, RequiredReasonField } from './fields.js';
import { IssuedCredentialSchema } from './issue-vc.js';

// docs/operations.md "Renewal": one credential on demand. Unknown fields are refused, not ignored.
export const RenewBodySchema = z.strictObject({
  credentialId: z
    .string({ error: 'required: the credential to renew' })
    .trim()
    .min(1, 'must not be empty')
    .max(255),
  reason: RequiredReasonField,
});
export type RenewBody = z.infer<typeof RenewBodySchema>;

/** docs/operations.md "Renewal": the new credential, the one it renews and whether that one was revoked. */
export const RenewedSchema = IssuedCredentialSchema.extend({
  renewedFrom: z.string(),
  previousRevoked: z.boolean(),
  expiresAt: Timestamp,
});
export type Renewed = z.infer<typeof RenewedSchema>;

/** `POST /admin/renew`: re-issue one direct credential to its holder, claims looked up again. */
export const renewRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/renew',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-renew',
    summary: 'Renew one direct credential: the same holder, claims from the claims provider again',
    tags: TAGS.admin,
    body: RenewBodySchema,
    responses: {
      201: {
        description: 'Renewed, and the new credential stored',
        contentType: 'application/json',
        schema: RenewedSchema,
      },
      202: {
        description: 'Renewed and recorded; the upload is retried in the background',
        contentType: 'application/json',
        schema: RenewedSchema,
      },
    },
    errors: ['NOT_FOUND', 'CONFLICT', 'CLAIMS_INVALID', 'UPSTREAM_UNAVAILABLE'],
  },
  handler: renewCredential(ctx.renewal, ctx.status),
});

export function renewCredential(renewal: RenewalService, status: StatusService) {
  return async (req: Request, res: Response) => {
    const body = parseInput(RenewBodySchema, req.body);
    const { record: r, previousRevoked } = await renewal.renew(
      body.credentialId,
      auditActor(res, body.reason),
    );
    res.status(r.uploadState === 'uploaded' ? 201 : 202).json({
      credentialId: r.credentialId,
      renewedFrom: body.credentialId,
      previousRevoked,
      revocationNonce: String(r.revocationNonce),
      holderDid: r.holderDid,
      schemaId: r.schemaId,
      status: r.statusSlot ? { idx: r.statusSlot.index, uri: status.uri(r.statusSlot.partition) } : null,
      expiresAt: r.expiresAt.toISOString(),
      storagePath: r.storagePath,
      uploadState: r.uploadState,
    } satisfies Renewed);
  };
}
