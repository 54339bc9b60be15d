import type { Request, Response } from 'express';
import { z } from 'zod';
import { AppError, notFound } from '../../../errors.js';
import type { StatusListForm } from '../../../formats/format.js';
import { ProofTypeSchema } from '../../../formats/schema-file.js';
import { type AuditActor, STATUS_NAMES, type StatusChange, type StatusName } from '../../../model.js';
import type { StatusJobs } from '../../../status/status-jobs.js';
import type { StatusService } from '../../../status/status-service.js';
import type { AuditStore, IssuanceStore } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';
import { auditActor, BatchSelectorField, ReasonField } from '../admin/fields.js';
import { NonceSchema } from '../nonce.js';
import { NonceString, Timestamp } from '../responses.js';
import { json200, type RouteFactory, TAGS } from '../route.js';

/** `GET /statuslist/:partition`: a signed token status list (draft-ietf-oauth-status-list §8). */
export const statusListRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/statuslist/:partition',
  group: 'public',
  auth: 'none',
  doc: {
    operationId: 'statuslist',
    summary: 'A token status list partition (draft-ietf-oauth-status-list)',
    tags: TAGS.public,
    params: { partition: z.string().regex(PARTITION) },
    responses: {
      200: {
        description:
          'The signed status list token; a request whose Accept names application/statuslist+cwt gets the CWT form, while a format that reads it (ISO mdoc) is on',
        contentType: ['application/statuslist+jwt', 'application/statuslist+cwt'],
      },
      304: { description: 'Not modified (If-None-Match)' },
    },
    errors: ['NOT_FOUND'],
  },
  handler: statusListPartition(
    ctx.status,
    [...ctx.formats.started.values()].flatMap((s) => (s.statusListForm ? [s.statusListForm] : [])),
  ),
});

/** Canonical decimal only: the token's `sub` must be the very URL the credentials carry. */
const PARTITION = /^(0|[1-9]\d*)$/;

export function statusListPartition(status: StatusService, forms: readonly StatusListForm[] = []) {
  return async (req: Request, res: Response) => {
    const raw = String(req.params.partition);
    if (!PARTITION.test(raw))
      throw new AppError('INVALID_PARAMETER', 'partition: must be a non-negative integer', {
        field: 'partition',
      });
    // A well-formed number beyond any partition we could have is simply unknown.
    const partition = Number(raw);
    if (!Number.isSafeInteger(partition)) throw notFound(`no status list partition ${raw}`);
    const published = await status.partitionToken(partition);
    // draft-ietf-oauth-status-list §8.1: the form is negotiated by Accept; the JWT by default.
    const types = ['application/statuslist+jwt', ...forms.map((f) => f.mediaType)];
    const chosen = forms.length > 0 ? req.accepts(types) : false;
    const form = forms.find((f) => f.mediaType === chosen);
    if (forms.length > 0) res.vary('Accept');
    if (form) {
      const etag = `${published.etag.slice(0, -1)}.${form.mediaType.split('+')[1]}"`;
      res.set('ETag', etag);
      res.set('Cache-Control', `public, max-age=${status.ttlSeconds}`);
      if (
        req
          .get('if-none-match')
          ?.split(',')
          .some((t) => t.trim() === etag)
      ) {
        res.status(304).end();
        return;
      }
      res
        .status(200)
        .type(form.mediaType)
        .send(Buffer.from(await form.render(published.token)));
      return;
    }
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
    // A Buffer, so Express adds no `; charset=utf-8` to the registered media type (draft-ietf-oauth-status-list §8.2).
    res.status(200).type('application/statuslist+jwt').send(Buffer.from(published.token));
  };
}

const StatusNameSchema = z.enum(Object.values(STATUS_NAMES) as [StatusName, ...StatusName[]]);

export const RevocationStatusSchema = z.object({ isRevoked: z.boolean(), status: StatusNameSchema });

/** `GET /revocation-status/:nonce` → `{ isRevoked, status }` (suspended is not revoked). */
export const revocationStatusRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/revocation-status/:nonce',
  group: 'public',
  auth: 'none',
  doc: {
    operationId: 'revocation-status',
    summary: '`{ isRevoked, status }`',
    tags: TAGS.public,
    params: { nonce: NonceSchema },
    responses: json200('`{ isRevoked, status }`', RevocationStatusSchema),
    errors: ['NOT_FOUND'],
  },
  handler: revocationStatus(ctx.store.issuances),
});

export function revocationStatus(issuances: IssuanceStore) {
  return async (req: Request, res: Response) => {
    const nonce = parseInput(z.object({ nonce: NonceSchema }), req.params, 'query').nonce;
    const record = await issuances.getByNonce(nonce);
    if (!record) throw notFound(`nonce: no credential with revocation nonce ${nonce}`);
    res.json({ isRevoked: record.status === 1, status: STATUS_NAMES[record.status] });
  };
}

/** The answer of revoke, suspend and unsuspend: the credential's status after the change. */
export const StatusChangeAnswerSchema = z.object({
  revocationNonce: NonceString,
  isRevoked: z.boolean(),
  status: StatusNameSchema,
  revokedAt: Timestamp.nullable(),
  suspendedAt: Timestamp.nullable(),
});
export type StatusChangeAnswer = z.infer<typeof StatusChangeAnswerSchema>;

export const StatusChangeBodySchema = z
  .object({
    revocationNonce: NonceSchema.optional(),
    nonce: NonceSchema.optional(),
    proofType: ProofTypeSchema.optional(),
    /** Every credential recorded under this batch id instead of one nonce (docs/interface.md "OpenID4VCI: the wallet door", batch issuance). */
    batchId: BatchSelectorField.optional(),
    reason: ReasonField,
  })
  .check((ctx) => {
    const { revocationNonce, nonce, batchId, proofType, reason } = ctx.value;
    const byNonce = revocationNonce !== undefined || nonce !== undefined;
    const issue = (path: string, message: string) =>
      ctx.issues.push({ code: 'custom', path: [path], message, input: undefined });
    if (batchId === undefined) {
      if (!byNonce) issue('revocationNonce', 'required unless batchId is given');
      return;
    }
    if (byNonce) issue('batchId', 'not with revocationNonce: give one of them');
    if (proofType !== undefined) issue('proofType', 'not with batchId');
    if (reason === undefined) issue('reason', 'required with batchId: say why (kept in the audit log)');
  });

/** The answer of a status change by `batchId`: the job that changed the batch, and how far it got. */
export const BatchStatusChangeAnswerSchema = z.object({
  batchId: z.string(),
  jobId: z.string(),
  state: z.enum(['running', 'done', 'failed']),
  count: z.number().int(),
  done: z.number().int(),
  failed: z.number().int(),
});
export type BatchStatusChangeAnswer = z.infer<typeof BatchStatusChangeAnswerSchema>;

/**
 * `POST /admin/revoke`, `/admin/suspend` and `/admin/unsuspend` (the last two need
 * STATUS_LIST_BITS=2). Only revoke honours `Idempotency-Key`: suspend and unsuspend are
 * idempotent by themselves. With `batchId`, every credential of the batch, as one bulk status
 * change job run within the request (docs/interface.md "OpenID4VCI: the wallet door", batch issuance).
 */
export const statusChangeRoutes: RouteFactory = (ctx) =>
  (['revoke', 'suspend', 'unsuspend'] as const).map((change) => ({
    method: 'post',
    path: `/admin/${change}`,
    group: 'admin',
    auth: 'admin-api-key',
    ...(change === 'revoke' ? { idempotency: 'admin/revoke' } : {}),
    doc: {
      operationId: `admin-${change}`,
      summary: `${change[0]!.toUpperCase()}${change.slice(1)} a credential by revocation nonce, or every credential of a batch by batchId${change === 'revoke' ? ' (Idempotency-Key honoured)' : ''}`,
      tags: TAGS.admin,
      body: StatusChangeBodySchema,
      responses: {
        ...json200(
          '`{ revocationNonce, isRevoked, status, revokedAt, suspendedAt }`',
          StatusChangeAnswerSchema,
        ),
        202: {
          description:
            'By batchId: the bulk status change job over the batch, `{ batchId, jobId, state, count, done, failed }`; `state: "done"` when it finished within the request, `"running"` when it goes on after it (`GET /admin/status-changes/:jobId`)',
          contentType: 'application/json',
          schema: BatchStatusChangeAnswerSchema,
        },
      },
      errors: ['NOT_FOUND', 'CONFLICT'],
    },
    handler: changeStatus(ctx.status, change, ctx.statusJobs, ctx.identity.statusLists.bits),
  }));

export function changeStatus(status: StatusService, change: StatusChange, jobs: StatusJobs, bits: 1 | 2) {
  return async (req: Request, res: Response) => {
    const body = parseInput(StatusChangeBodySchema, req.body);
    if (body.batchId !== undefined) {
      if (change !== 'revoke' && bits !== 2)
        throw new AppError(
          'INVALID_PARAMETER',
          'batchId: suspension needs a 2-bit status list (STATUS_LIST_BITS=2)',
          {
            field: 'batchId',
          },
        );
      const answer = await changeBatch(jobs, change, body.batchId, auditActor(res, body.reason));
      res.status(202).json(answer);
      return;
    }
    const nonce = (body.revocationNonce ?? body.nonce)!;
    const record = await status.change(nonce, change, body.proofType, auditActor(res, body.reason));
    res.json({
      revocationNonce: String(record.revocationNonce),
      isRevoked: record.status === 1,
      status: STATUS_NAMES[record.status],
      revokedAt: record.revokedAt?.toISOString() ?? null,
      suspendedAt: record.suspendedAt?.toISOString() ?? null,
    } satisfies StatusChangeAnswer);
  };
}

/**
 * A batch's change is a bulk status change job selecting its batch id
 * (docs/operations.md "Bulk status changes"): chunked, audited per credential, resumed by another
 * instance if this one dies, and its partitions published once. The request waits for this
 * process's run of it.
 */
async function changeBatch(
  jobs: StatusJobs,
  change: StatusChange,
  batchId: string,
  audit: AuditActor,
): Promise<BatchStatusChangeAnswer> {
  if ((await jobs.count({ batchId })) === 0)
    throw new AppError('NOT_FOUND', `batchId: no credential recorded under batch ${batchId}`, {
      field: 'batchId',
    });
  const created = await jobs.create(change, { batchId }, { ...audit, reason: audit.reason ?? '' });
  await jobs.runLeased(created.id);
  const job = (await jobs.get(created.id)) ?? created;
  return {
    batchId,
    jobId: job.id,
    state: job.state,
    count: job.total,
    done: job.done,
    failed: job.failed,
  };
}

/** `POST /admin/publish-token-status-list`. */
export const publishStatusListsRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/publish-token-status-list',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-publish-token-status-list',
    summary: 'Rebuild and re-sign every status list partition',
    tags: TAGS.admin,
    responses: json200('`{ partitions: [{ partition, uri, size, iat }] }`', PublishedListsSchema),
  },
  handler: publishStatusLists(ctx.status, ctx.store.audit),
});

export const PublishedListsSchema = z.object({
  partitions: z.array(
    z.object({ partition: z.number().int(), uri: z.string(), size: z.number().int(), iat: z.number().int() }),
  ),
});

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
