import type { Request, Response } from 'express';
import { z } from 'zod';
import { AppError } from '../../../errors.js';
import { assertPublicKey, HolderBindingJwkSchema } from '../../../formats/sd-jwt-vc/holder-binding-key.js';
import {
  CredentialSubjectSchema,
  DisclosureFrameSchema,
  disclosureFrameProblems,
  ExpirationSchema,
  OnDuplicateSchema,
} from '../../../issuance/direct-input.js';
import {
  credentialIdFor,
  type DirectClaims,
  type DirectIssuanceService,
  type DirectIssueResult,
} from '../../../issuance/direct-issuance.js';
import { DIRECT_TO_KEY } from '../../../issuance/direct-mdoc.js';
import { RecipientEmailSchema } from '../../../issuance/recipient-email.js';
import { boundedText, MAX_ID_BYTES } from '../../../model.js';
import type { StatusService } from '../../../status/status-service.js';
import { parseInput } from '../../middleware/validate.js';
import { NonceString, UploadStateSchema } from '../responses.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { auditActor, ReasonField, SchemaIdField, VctField } from './fields.js';
import { StatusListEntrySchema } from './history.js';

/** A disclosure frame that does not fit the body's claims is a 400 naming the frame entry. */
const frameFits = (
  value: { credentialSubject?: unknown; disclosureFrame?: unknown },
  ctx: z.RefinementCtx,
): void => {
  // The claims provider's claims are known only when issuing: the frame is checked then.
  if (value.disclosureFrame === undefined || value.credentialSubject === undefined) return;
  for (const p of disclosureFrameProblems(value.disclosureFrame, value.credentialSubject))
    ctx.addIssue({ code: 'custom', path: p.field.split('.'), message: p.message });
};

/** Exactly one source of claims: the body's own, or the claims provider's for a user id. */
const oneClaimsSource = (
  value: { credentialSubject?: unknown; claimsUserId?: unknown },
  ctx: z.RefinementCtx,
): void => {
  const given = (value.credentialSubject !== undefined ? 1 : 0) + (value.claimsUserId !== undefined ? 1 : 0);
  if (given === 1) return;
  ctx.addIssue({
    code: 'custom',
    path: [value.credentialSubject === undefined ? 'credentialSubject' : 'claimsUserId'],
    message:
      given === 0 ? 'required unless claimsUserId is given' : 'not with credentialSubject: give one of them',
  });
};

/** A batch-issue run's id (`batch-` and hex; docs/admin-cli.md "CSV batches"), recorded with the credential. */
export const BatchIdField = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'letters, digits, _ . : - only, at most 128');

/** The claims provider's user id (the hosted flow's `userId`), whose claims are issued. */
const ClaimsUserIdField = boundedText(MAX_ID_BYTES);

/**
 * With `proofType: MSO_MDOC` the credential is an ISO mdoc bound to `holderKey`, handed back
 * rather than uploaded; `vct`, `disclosureFrame` and the onDuplicate choices are SD-JWT VC's.
 */
const formatFields = (
  value: {
    proofType?: string | undefined;
    vct?: unknown;
    holderKey?: unknown;
    disclosureFrame?: unknown;
    onDuplicate?: string;
  },
  ctx: z.RefinementCtx,
): void => {
  const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  if (value.proofType !== DIRECT_TO_KEY) {
    if (value.vct === undefined) issue('vct', 'required');
    if (value.holderKey !== undefined) issue('holderKey', `only with proofType ${DIRECT_TO_KEY}`);
    return;
  }
  if (value.holderKey === undefined)
    issue('holderKey', `required with proofType ${DIRECT_TO_KEY} (its device key)`);
  if (value.vct !== undefined) issue('vct', `not with proofType ${DIRECT_TO_KEY}`);
  if (value.disclosureFrame !== undefined) issue('disclosureFrame', `not with proofType ${DIRECT_TO_KEY}`);
  if (value.onDuplicate !== 'allow') issue('onDuplicate', `only allow with proofType ${DIRECT_TO_KEY}`);
};

// docs/interface.md "admin issue-vc" body; `claimsUserId` instead of `credentialSubject`, `proofType` and `holderKey` are this kit's.
export const AdminIssueVcBodySchema = z
  .object({
    userId: RecipientEmailSchema,
    schemaId: SchemaIdField,
    proofType: z
      .enum(['SD_JWT_VC', DIRECT_TO_KEY], { error: `must be SD_JWT_VC or ${DIRECT_TO_KEY}` })
      .optional(),
    holderKey: HolderBindingJwkSchema.optional(),
    vct: VctField.optional(),
    expiration: ExpirationSchema,
    credentialSubject: CredentialSubjectSchema.optional(),
    claimsUserId: ClaimsUserIdField.optional(),
    disclosureFrame: DisclosureFrameSchema.optional(),
    onDuplicate: OnDuplicateSchema.default('allow'),
    reason: ReasonField,
    batchId: BatchIdField.optional(),
  })
  .superRefine(oneClaimsSource)
  .superRefine(formatFields)
  .superRefine(frameFits);
export type AdminIssueVcBody = z.infer<typeof AdminIssueVcBodySchema>;

/** docs/interface.md "admin issue-vc": the credential issued (or, with onDuplicate=ignore, found). */
export const IssuedCredentialSchema = z.object({
  credentialId: z.string(),
  revocationNonce: NonceString,
  holderDid: z.string(),
  schemaId: z.string(),
  status: StatusListEntrySchema.nullable(),
  storagePath: z.string().nullable(),
  uploadState: UploadStateSchema,
  /** An mdoc given to a holder key (`proofType: MSO_MDOC`): the base64url IssuerSigned, to deliver. */
  credential: z.string().optional(),
});
export type IssuedCredential = z.infer<typeof IssuedCredentialSchema>;

/** The answer of issue-vc: 201 stored upstream, 202 still being uploaded, 200 an existing one (ignore). */
function issueAnswer(
  status: StatusService,
  result: DirectIssueResult,
): { httpStatus: number; body: IssuedCredential } {
  const r = result.record;
  return {
    httpStatus: result.outcome === 'existing' ? 200 : r.uploadState === 'uploaded' ? 201 : 202,
    body: {
      credentialId: r.credentialId,
      revocationNonce: String(r.revocationNonce),
      holderDid: r.holderDid,
      schemaId: r.schemaId,
      status: r.statusSlot ? { idx: r.statusSlot.index, uri: status.uri(r.statusSlot.partition) } : null,
      storagePath: r.storagePath,
      uploadState: r.uploadState,
    },
  };
}

/** `POST /admin/issue-vc`: direct issuance to a holder known by email. */
export const adminIssueVcRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/issue-vc',
  group: 'admin',
  auth: 'admin-api-key',
  idempotency: 'admin/issue-vc',
  doc: {
    operationId: 'admin-issue-vc',
    summary: 'Direct issuance by email (Idempotency-Key honoured)',
    tags: TAGS.admin,
    body: AdminIssueVcBodySchema,
    responses: {
      200: {
        description: 'onDuplicate=ignore found a valid credential',
        contentType: 'application/json',
        schema: IssuedCredentialSchema,
      },
      201: {
        description:
          'Issued and stored; with proofType MSO_MDOC, issued and recorded, the mdoc in `credential` (not uploaded)',
        contentType: 'application/json',
        schema: IssuedCredentialSchema,
      },
      202: {
        description: 'Issued and recorded; the upload is retried in the background',
        contentType: 'application/json',
        schema: IssuedCredentialSchema,
      },
    },
    errors: ['UNAUTHORIZED', 'NOT_FOUND', 'CONFLICT', 'CLAIMS_INVALID', 'UPSTREAM_UNAVAILABLE'],
  },
  handler: adminIssueVc(ctx.direct, ctx.status),
});

export function adminIssueVc(direct: DirectIssuanceService, status: StatusService) {
  return async (req: Request, res: Response) => {
    const body = parseInput(AdminIssueVcBodySchema, req.body);
    if (body.proofType === DIRECT_TO_KEY) {
      res.status(201).json(await issueToKey(direct, status, body, req.get('idempotency-key'), res));
      return;
    }
    const result = await direct.issue({
      ...claimsSource(body),
      email: body.userId,
      schemaId: body.schemaId,
      vct: body.vct!,
      expiresAt: body.expiration,
      disclosureFrame: body.disclosureFrame,
      onDuplicate: body.onDuplicate,
      idempotencyKey: req.get('idempotency-key'),
      audit: auditActor(res, body.reason),
      batchId: body.batchId,
    });
    const answer = issueAnswer(status, result);
    res.status(answer.httpStatus).json(answer.body);
  };
}

/** docs/interface.md "admin issue-vc": an mdoc to a holder key, answered with the credential. */
async function issueToKey(
  direct: DirectIssuanceService,
  status: StatusService,
  body: AdminIssueVcBody,
  idempotencyKey: string | undefined,
  res: Response,
): Promise<IssuedCredential> {
  const result = await direct.toKey.issue({
    ...claimsSource(body),
    email: body.userId,
    schemaId: body.schemaId,
    holderJwk: assertPublicKey(body.holderKey!, 'holderKey'),
    expiresAt: body.expiration,
    credentialId: idempotencyKey === undefined ? undefined : credentialIdFor(idempotencyKey),
    audit: auditActor(res, body.reason),
    batchId: body.batchId,
  });
  // Recorded by an earlier request whose answer was lost: the credential was not kept, so it cannot be given again.
  if (result.credential === undefined)
    throw new AppError(
      'CONFLICT',
      'Idempotency-Key: this credential was recorded by an earlier request; revoke it and issue again with a new key',
      { field: 'Idempotency-Key', credentialId: result.record.credentialId },
    );
  return {
    ...issueAnswer(status, { outcome: 'issued', record: result.record }).body,
    credential: result.credential,
  };
}

/** The body's claims or its claims user id, whichever the (refined) body has. */
const claimsSource = (body: {
  credentialSubject?: Record<string, unknown> | undefined;
  claimsUserId?: string | undefined;
}): DirectClaims =>
  body.credentialSubject !== undefined
    ? { credentialSubject: body.credentialSubject }
    : { claimsUserId: body.claimsUserId! };

export const ValidateRowsBodySchema = z.object({
  rows: z
    .array(
      z
        .object({
          schemaId: SchemaIdField,
          vct: VctField.optional(),
          credentialSubject: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
          claimsUserId: ClaimsUserIdField.optional(),
          disclosureFrame: DisclosureFrameSchema.optional(),
        })
        .superRefine(oneClaimsSource),
    )
    .min(1)
    .max(1000),
});

/** `POST /admin/issue-vc/validate`. */
export const validateRowsRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/issue-vc/validate',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-issue-vc-validate',
    summary: 'Check issue-vc rows without issuing',
    tags: TAGS.admin,
    body: ValidateRowsBodySchema,
    responses: json200(
      '`{ problems, vct, expiresInSeconds }`',
      z.object({
        problems: z.array(z.object({ row: z.number().int(), field: z.string(), message: z.string() })),
        /** Each named schema's default vct. */
        vct: z.record(z.string(), z.string()),
        /** Each named schema's credential lifetime. */
        expiresInSeconds: z.record(z.string(), z.number()),
      }),
    ),
    errors: ['NOT_FOUND', 'UPSTREAM_UNAVAILABLE'],
  },
  handler: validateIssueRows(ctx.direct),
});

/**
 * `POST /admin/issue-vc/validate` (kit extension, for batch issuance): every problem of each row
 * that the server can tell without issuing: `{ problems: [{ row, field, message }], vct, expiresInSeconds }`
 * (row = index; the last two: each named schema's default vct and credential lifetime).
 */
export function validateIssueRows(direct: DirectIssuanceService) {
  return async (req: Request, res: Response) => {
    const body = parseInput(ValidateRowsBodySchema, req.body);
    const problems: Array<{ row: number; field: string; message: string }> = [];
    // One row at a time: a claims user id is a lookup at the claims provider.
    for (const [i, row] of body.rows.entries())
      for (const p of await direct.checkRequest({
        schemaId: row.schemaId,
        disclosureFrame: row.disclosureFrame,
        ...claimsSource(row),
      }))
        problems.push({ row: i, ...p });
    // The vct each schema issues under by default, for rows that bring none.
    const vct = Object.fromEntries(
      [...new Set(body.rows.map((r) => r.schemaId))].flatMap((id) => {
        const v = direct.defaultVct(id);
        return v === undefined ? [] : [[id, v]];
      }),
    );
    // And each schema's credential lifetime, for callers that bring no expiration (`admin issue`).
    const expiresInSeconds = Object.fromEntries(
      Object.keys(vct).map((id) => [id, direct.defaultLifetimeSeconds(id)]),
    );
    res.json({ problems, vct, expiresInSeconds });
  };
}
