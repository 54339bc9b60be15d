import type { Request, Response } from 'express';
import { z } from 'zod';
import { AppError, notFound } from '../../../errors.js';
import type { EmailHasher } from '../../../issuance/email-hash.js';
import { HolderDidSchema } from '../../../model.js';
import type { StatusJobs } from '../../../status/status-jobs.js';
import {
  SelectionChanged,
  type StatusJobRecord,
  type StatusJobSelector,
} from '../../../store/status-job-store.js';
import { parseInput } from '../../middleware/validate.js';
import { Timestamp } from '../responses.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import {
  auditActor,
  BatchSelectorField,
  EmailFilterField,
  RequiredReasonField,
  SchemaIdField,
} from './fields.js';

/** The most credential ids one request may name (docs/admin-cli.md "Bulk status changes"). */
export const MAX_SELECTOR_IDS = 10_000;

/**
 * The body limit of this route: 10,000 ids of the longest allowed (255 characters, quoted, with a
 * comma) and the rest of the body, so that the documented maximum is a 400 naming `credentialIds`
 * past it rather than the default 100 kB limit's 413 from about 2,500 ids.
 */
export const STATUS_CHANGES_BODY_BYTES = MAX_SELECTOR_IDS * 258 + 16 * 1024;

const IsoDateTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with an offset' });

/** Which credentials: every given field must match. Unknown fields are refused, not ignored. */
export const SelectorSchema = z
  .strictObject({
    schemaId: SchemaIdField.optional(),
    holderDid: HolderDidSchema.optional(),
    email: EmailFilterField.optional(),
    batchId: BatchSelectorField.optional(),
    kid: z.string().min(1).max(255).optional(),
    issuedAfter: IsoDateTime.optional(),
    issuedBefore: IsoDateTime.optional(),
    credentialIds: z
      .array(z.string().min(1).max(255))
      .min(1, 'must name at least one credential id')
      .max(MAX_SELECTOR_IDS, `at most ${MAX_SELECTOR_IDS.toLocaleString('en')} ids; split the list`)
      .optional(),
  })
  .superRefine((s, ctx) => {
    if (Object.values(s).every((v) => v === undefined))
      ctx.addIssue({
        code: 'custom',
        path: [],
        message:
          'must name at least one of schemaId, holderDid, email, batchId, kid, issuedAfter, issuedBefore, credentialIds',
      });
    if (s.issuedAfter && s.issuedBefore && Date.parse(s.issuedAfter) >= Date.parse(s.issuedBefore))
      ctx.addIssue({ code: 'custom', path: ['issuedBefore'], message: 'must be after issuedAfter' });
  });

export const StatusChangesBodySchema = z.strictObject({
  change: z.enum(['revoke', 'suspend', 'unsuspend'], { error: 'must be one of revoke, suspend, unsuspend' }),
  selector: SelectorSchema,
  reason: RequiredReasonField,
  dryRun: z.boolean().optional(),
  /**
   * The count the operator confirmed (the dry run's): when the selector now matches another
   * number, 409 and nothing is changed (docs/operations.md "Bulk status changes").
   */
  expectedCount: z
    .number({ error: 'must be a whole number' })
    .int('must be a whole number')
    .min(0, 'must be at least 0')
    .optional(),
});
export type StatusChangesBody = z.infer<typeof StatusChangesBodySchema>;

/** A bulk status change job as `GET /admin/status-changes/:jobId` answers it. */
export const StatusJobSchema = z.object({
  jobId: z.string(),
  change: z.enum(['revoke', 'suspend', 'unsuspend']),
  state: z.enum(['running', 'done', 'failed']),
  total: z.number().int(),
  done: z.number().int(),
  failed: z.number().int(),
  reason: z.string(),
  actor: z.string(),
  createdAt: Timestamp,
  finishedAt: Timestamp.nullable(),
  /** Why a failed job stopped. */
  error: z.string().optional(),
});
export type StatusJob = z.infer<typeof StatusJobSchema>;

/** The answer of `GET /admin/status-changes/:jobId`. */
export function jobAnswer(job: StatusJobRecord): StatusJob {
  return {
    jobId: job.id,
    change: job.change,
    state: job.state,
    total: job.total,
    done: job.done,
    failed: job.failed,
    reason: job.reason,
    actor: job.actor,
    createdAt: job.createdAt.toISOString(),
    finishedAt: job.finishedAt?.toISOString() ?? null,
    ...(job.state === 'failed' && job.error ? { error: job.error } : {}),
  };
}

/** `POST /admin/status-changes`: revoke, suspend or unsuspend every credential a selector matches. */
export const statusChangesRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/status-changes',
  group: 'admin',
  auth: 'admin-api-key',
  jsonLimit: STATUS_CHANGES_BODY_BYTES,
  doc: {
    operationId: 'admin-status-changes',
    summary: 'Bulk status change: a job over every credential the selector matches (dryRun: the count only)',
    tags: TAGS.admin,
    body: StatusChangesBodySchema,
    responses: {
      200: {
        description: 'dryRun: `{ count }`, nothing changed',
        contentType: 'application/json',
        schema: z.object({ count: z.number().int() }),
      },
      202: {
        description: 'The job is recorded and running: `{ jobId, count }`',
        contentType: 'application/json',
        schema: z.object({ jobId: z.string(), count: z.number().int() }),
      },
    },
    errors: ['CONFLICT'],
  },
  handler: startStatusChanges(ctx.statusJobs, ctx.hashEmail, ctx.identity.statusLists.bits),
});

export function startStatusChanges(jobs: StatusJobs, hashEmail: EmailHasher, bits: 1 | 2) {
  return async (req: Request, res: Response) => {
    const body = parseInput(StatusChangesBodySchema, req.body);
    if (body.change !== 'revoke' && bits !== 2)
      throw new AppError(
        'INVALID_PARAMETER',
        'change: suspension needs a 2-bit status list (STATUS_LIST_BITS=2)',
        {
          field: 'change',
        },
      );
    const { email, issuedAfter, issuedBefore, ...rest } = body.selector;
    const selector: StatusJobSelector = {
      ...rest,
      ...(email === undefined ? {} : { emailHash: await hashEmail(email) }),
      ...(issuedAfter === undefined ? {} : { issuedAfter: new Date(issuedAfter) }),
      ...(issuedBefore === undefined ? {} : { issuedBefore: new Date(issuedBefore) }),
    };
    if (body.dryRun) {
      const count = await jobs.count(selector);
      if (body.expectedCount !== undefined && count !== body.expectedCount)
        throw selectionChanged(new SelectionChanged(body.expectedCount, count));
      res.json({ count });
      return;
    }
    try {
      const job = await jobs.create(
        body.change,
        selector,
        { ...auditActor(res, body.reason), reason: body.reason },
        body.expectedCount,
      );
      res.status(202).json({ jobId: job.id, count: job.total });
    } catch (err) {
      throw err instanceof SelectionChanged ? selectionChanged(err) : err;
    }
  };
}

/** docs/operations.md "Bulk status changes": both numbers, so the console can show them. */
const selectionChanged = (err: SelectionChanged) =>
  new AppError('CONFLICT', `expectedCount: ${err.message}; nothing was changed`, {
    field: 'expectedCount',
    expectedCount: err.expectedCount,
    count: err.count,
  });

const JobIdSchema = z.string().regex(/^sj_[0-9a-f-]{36}$/, 'not a status change job id');

/** `GET /admin/status-changes/:jobId` → `{ state, total, done, failed, ... }`. */
export const statusChangeJobRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/admin/status-changes/:jobId',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-status-change-job',
    summary: 'A bulk status change job: `{ state: running | done | failed, total, done, failed }`',
    tags: TAGS.admin,
    params: { jobId: JobIdSchema },
    responses: json200(
      '`{ jobId, change, state, total, done, failed, reason, actor, createdAt, finishedAt }`',
      StatusJobSchema,
    ),
    errors: ['NOT_FOUND'],
  },
  handler: async (req: Request, res: Response) => {
    const { jobId } = parseInput(z.object({ jobId: JobIdSchema }), req.params, 'query');
    const job = await ctx.statusJobs.get(jobId);
    if (!job) throw notFound(`jobId: no status change job ${jobId}`);
    res.json(jobAnswer(job));
  },
});
