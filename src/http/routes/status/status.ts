import type { Request, Response } from 'express';
import { z } from 'zod';
import { AppError, notFound } from '../../../errors.js';
import { ProofTypeSchema, STATUS_NAMES, type StatusChange } from '../../../model.js';
import type { StatusService } from '../../../status/status-service.js';
import type { AuditStore, IssuanceStore } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';
import { auditActor, ReasonField } from '../admin/fields.js';
import { NonceSchema } from '../nonce.js';

/** spec 4.6 `GET /statuslist/:partition` (draft-ietf-oauth-status-list §8). */
export function statusListPartition(status: StatusService) {
  return async (req: Request, res: Response) => {
    const raw = String(req.params.partition);
    // Canonical decimal only: the token's `sub` must be the very URL the credentials carry.
    if (!/^(0|[1-9]\d*)$/.test(raw))
      throw new AppError('INVALID_PARAMETER', 'partition: must be a non-negative integer', {
        field: 'partition',
      });
    // A well-formed number beyond any partition we could have is simply unknown.
    const partition = Number(raw);
    if (!Number.isSafeInteger(partition)) throw notFound(`no status list partition ${raw}`);
    const published = await status.partitionToken(partition);
    res.set('ETag', published.etag);
    res.set('Cache-Control', `public, max-age=${status.ttlSeconds}`);
    if (
      req.fresh ||
      req
        .get('if-none-match')
        ?.split(',')
        .some((t) => t.trim() === published.etag)
    ) {
      res.status(304).end();
      return;
    }
    // A Buffer, so Express adds no `; charset=utf-8` to the registered media type (§8.2).
    res.status(200).type('application/statuslist+jwt').send(Buffer.from(published.token));
  };
}

/** spec 4.6 `GET /revocation-status/:nonce` → `{ isRevoked }` (suspended is not revoked). */
export function revocationStatus(issuances: IssuanceStore) {
  return async (req: Request, res: Response) => {
    const nonce = parseInput(z.object({ nonce: NonceSchema }), req.params, 'query').nonce;
    const record = await issuances.getByNonce(nonce);
    if (!record) throw notFound(`nonce: no credential with revocation nonce ${nonce}`);
    res.json({ isRevoked: record.status === 1, status: STATUS_NAMES[record.status] });
  };
}

export const StatusChangeBodySchema = z
  .object({
    revocationNonce: NonceSchema.optional(),
    nonce: NonceSchema.optional(),
    proofType: ProofTypeSchema.optional(),
    reason: ReasonField,
  })
  .check((ctx) => {
    if (ctx.value.revocationNonce === undefined && ctx.value.nonce === undefined) {
      ctx.issues.push({ code: 'custom', path: ['revocationNonce'], message: 'required', input: undefined });
    }
  });

/** spec 4.6 `POST /admin/revoke`, and suspend/unsuspend with a 2-bit list. */
export function changeStatus(status: StatusService, change: StatusChange) {
  return async (req: Request, res: Response) => {
    const body = parseInput(StatusChangeBodySchema, req.body);
    const nonce = (body.revocationNonce ?? body.nonce)!;
    const record = await status.change(nonce, change, body.proofType, auditActor(res, body.reason));
    res.json({
      revocationNonce: String(record.revocationNonce),
      isRevoked: record.status === 1,
      status: STATUS_NAMES[record.status],
      revokedAt: record.revokedAt?.toISOString() ?? null,
      suspendedAt: record.suspendedAt?.toISOString() ?? null,
    });
  };
}

/** `POST /admin/publish-token-status-list` → `{ partitions: [{ partition, uri, size, iat }] }`. */
export function publishStatusLists(status: StatusService, audit: AuditStore) {
  return async (req: Request, res: Response) => {
    const reason = parseInput(z.object({ reason: ReasonField }), req.body ?? {}).reason;
    const partitions = await status.publishAll();
    // Each partition is signed and stored on its own: the record follows them.
    await audit.record({
      ...auditActor(res, reason),
      at: new Date(),
      action: 'status-list.publish',
      target: partitions.map((p) => p.partition).join(',') || '(none)',
    });
    res.json({
      partitions: partitions.map(({ partition, uri, size, iat }) => ({ partition, uri, size, iat })),
    });
  };
}
