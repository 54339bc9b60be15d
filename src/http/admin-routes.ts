import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { AppError, invalidParameter } from '../errors.js';
import {
  CredentialSubjectSchema,
  DisclosureFrameSchema,
  disclosureFrameProblems,
  ExpirationSchema,
  type InputProblem,
  OnDuplicateSchema,
} from '../issuance/direct-input.js';
import type { DirectIssuanceService, DirectIssueResult } from '../issuance/direct-issuance.js';
import { RecipientEmailSchema } from '../issuance/recipient-email.js';
import { type KeyPurpose, type ManagedKey, rotateKey } from '../keys/key-ring.js';
import { publishedSigningKeys } from '../keys/published-keys.js';
import { ProofTypeSchema } from '../schemas/schema-file.js';
import { RESERVED_CLAIMS } from '../schemas/schema-registry.js';
import type { StatusService } from '../status/status-service.js';
import type { ClaimsRecord, IssuanceHistoryStore, IssuanceSummary, Store } from '../store/store.js';
import { NonceSchema } from './nonce.js';
import { parseInput } from './validate.js';

const schemaId = z.string().min(1).max(255);
const vct = z.string().min(1).max(2048);

/** A disclosure frame that does not fit the claims is a 400 naming the frame entry. */
const frameFits = (
  value: { credentialSubject?: unknown; disclosureFrame?: unknown },
  ctx: z.RefinementCtx,
): void => {
  if (value.disclosureFrame === undefined) return;
  for (const p of disclosureFrameProblems(value.disclosureFrame, value.credentialSubject))
    ctx.addIssue({ code: 'custom', path: p.field.split('.'), message: p.message });
};

// spec 4.6 `POST /admin/issue-vc` body.
export const AdminIssueVcBodySchema = z
  .object({
    userId: RecipientEmailSchema,
    schemaId,
    vct,
    expiration: ExpirationSchema,
    credentialSubject: CredentialSubjectSchema,
    disclosureFrame: DisclosureFrameSchema.optional(),
    onDuplicate: OnDuplicateSchema.default('allow'),
  })
  .superRefine(frameFits);
export type AdminIssueVcBody = z.infer<typeof AdminIssueVcBodySchema>;

/** The answer of issue-vc: 201 stored upstream, 202 still being uploaded, 200 an existing one (ignore). */
function issueAnswer(status: StatusService, result: DirectIssueResult) {
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

/** spec 4.6 `POST /admin/issue-vc`: direct issuance to a holder known by email. */
export function adminIssueVc(direct: DirectIssuanceService, status: StatusService) {
  return async (req: Request, res: Response) => {
    const body = parseInput(AdminIssueVcBodySchema, req.body);
    const result = await direct.issue({
      email: body.userId,
      schemaId: body.schemaId,
      vct: body.vct,
      expiresAt: body.expiration,
      credentialSubject: body.credentialSubject,
      disclosureFrame: body.disclosureFrame,
      onDuplicate: body.onDuplicate,
      idempotencyKey: req.get('idempotency-key'),
    });
    const answer = issueAnswer(status, result);
    res.status(answer.httpStatus).json(answer.body);
  };
}

export const ValidateRowsBodySchema = z.object({
  rows: z
    .array(
      z.object({
        schemaId,
        vct: vct.optional(),
        credentialSubject: z.record(z.string(), z.unknown(), { error: 'must be an object' }),
        disclosureFrame: DisclosureFrameSchema.optional(),
      }),
    )
    .min(1)
    .max(1000),
});

/**
 * `POST /admin/issue-vc/validate` (kit extension, for batch issuance): every problem of each row
 * that the server can tell without issuing: `{ problems: [{ row, field, message }] }`, row = index.
 */
export function validateIssueRows(direct: DirectIssuanceService) {
  return async (req: Request, res: Response) => {
    const body = parseInput(ValidateRowsBodySchema, req.body);
    const problems = body.rows.flatMap((row, i) => direct.checkRequest(row).map((p) => ({ row: i, ...p })));
    // The vct each schema issues under by default, for rows that bring none.
    const vct = Object.fromEntries(
      [...new Set(body.rows.map((r) => r.schemaId))].flatMap((id) => {
        const v = direct.defaultVct(id);
        return v === undefined ? [] : [[id, v]];
      }),
    );
    res.json({ problems, vct });
  };
}

type DerivedStatus = 'valid' | 'revoked' | 'suspended' | 'expired';

/** Revoked is final; an expired credential is expired whether or not it was suspended. */
export function derivedStatus(r: Pick<IssuanceSummary, 'status' | 'expiresAt'>, now: Date): DerivedStatus {
  if (r.status === 1) return 'revoked';
  if (r.expiresAt.getTime() <= now.getTime()) return 'expired';
  return r.status === 2 ? 'suspended' : 'valid';
}

const wholeNumber = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`));

const HistoryQueryShape = {
  page: wholeNumber('page', 1, 1_000_000).default(1),
  limit: wholeNumber('limit', 1, 100).default(25),
  order: z
    .enum(['createdAt_desc', 'createdAt_asc'], { error: 'must be createdAt_desc or createdAt_asc' })
    .default('createdAt_desc'),
  holderDid: z.string().min(1).max(2048).optional(),
  schemaId: schemaId.optional(),
  revocationNonce: NonceSchema.optional(),
  proofType: ProofTypeSchema.optional(),
  status: z
    .enum(['valid', 'revoked', 'suspended', 'expired', 'upload_pending'], {
      error: 'must be one of valid, revoked, suspended, expired, upload_pending',
    })
    .optional(),
};
export const HistoryQuerySchema = z.object(HistoryQueryShape);

/** spec 4.6 `GET /admin/issuance-history`: `{ data, pagination: { page, limit, total } }`, never claims. */
export function issuanceHistory(history: IssuanceHistoryStore, status: StatusService) {
  return async (req: Request, res: Response) => {
    const query = req.query as Record<string, unknown>;
    for (const name of Object.keys(query)) {
      if (!Object.hasOwn(HistoryQueryShape, name)) throw invalidParameter(name, 'unknown parameter');
    }
    const q = parseInput(HistoryQuerySchema, query, 'query');
    const now = new Date();
    const { records, total } = await history.list({ ...q, now });
    res.json({
      data: records.map((r) => ({
        credentialId: r.credentialId,
        holderDid: r.holderDid,
        schemaId: r.schemaId,
        proofType: r.proofType,
        revocationNonce: String(r.revocationNonce),
        status: derivedStatus(r, now),
        statusList: r.statusSlot
          ? { idx: r.statusSlot.index, uri: status.uri(r.statusSlot.partition) }
          : null,
        kid: r.kid,
        createdAt: r.createdAt.toISOString(),
        expiresAt: r.expiresAt.toISOString(),
        revokedAt: r.revokedAt?.toISOString() ?? null,
        uploadState: r.uploadState,
        storagePath: r.storagePath,
      })),
      pagination: { page: q.page, limit: q.limit, total },
    });
  };
}

export const ClaimsImportBodySchema = z.object({
  records: z
    .array(
      z.object({
        userId: z.string().min(1).max(2048),
        schemaId,
        claims: z.record(z.string(), z.unknown(), { error: 'must be an object' }),
        expiresAt: z.iso.datetime({ offset: true }).nullable().optional(),
      }),
    )
    .min(1)
    .max(1000),
  /** Check only: answers `{ upserted: 0 }` when every record is good. */
  dryRun: z.boolean().default(false),
});

/**
 * `POST /admin/claims` (kit extension; DESIGN §8 provider "sqlite", filled by `admin claims
 * import`): upserts claims records after checking every one; nothing is written if any is bad.
 */
export function importClaims(ctx: Pick<AppContext, 'schemas'> & { store: Pick<Store, 'claims'> }) {
  return async (req: Request, res: Response) => {
    const body = parseInput(ClaimsImportBodySchema, req.body);
    const badSchema: InputProblem[] = [];
    const badClaims: InputProblem[] = [];
    body.records.forEach((r, i) => {
      const schema = ctx.schemas.get(r.schemaId);
      if (!schema)
        badSchema.push({ field: `records.${i}.schemaId`, message: `unknown schema ${r.schemaId}` });
      else if (schema.claims.provider !== 'sqlite')
        badSchema.push({
          field: `records.${i}.schemaId`,
          message: `schema ${r.schemaId} reads claims from its ${schema.claims.provider} provider, not the sqlite table`,
        });
      else {
        for (const c of RESERVED_CLAIMS.filter((c) => Object.hasOwn(r.claims, c)))
          badClaims.push({ field: `records.${i}.claims.${c}`, message: 'reserved claim name' });
        for (const p of schema.validateClaims(r.claims))
          badClaims.push({ field: `records.${i}.claims.${p.claim}`, message: p.message });
      }
    });
    if (badSchema.length > 0) {
      throw new AppError(400, 'INVALID_PARAMETER', `${badSchema[0]!.field}: ${badSchema[0]!.message}`, {
        field: badSchema[0]!.field,
        issues: badSchema,
      });
    }
    if (badClaims.length > 0) {
      throw new AppError(422, 'CLAIMS_INVALID', `${badClaims.length} claims do not fit their schema`, {
        field: badClaims[0]!.field,
        issues: badClaims,
      });
    }
    if (body.dryRun) {
      res.json({ upserted: 0 });
      return;
    }
    const records: ClaimsRecord[] = body.records.map((r) => ({
      userId: r.userId,
      schemaId: r.schemaId,
      claims: r.claims,
      expiresAt: r.expiresAt ? new Date(r.expiresAt) : null,
    }));
    res.json({ upserted: await ctx.store.claims.upsertClaims(records) });
  };
}

function describeKey(k: ManagedKey) {
  return {
    kid: k.kid,
    purpose: k.purpose,
    alg: k.alg,
    createdAt: k.createdAt.toISOString(),
    retiredAt: k.retiredAt?.toISOString() ?? null,
    active: k.retiredAt === undefined,
  };
}

/**
 * `GET /admin/keys` (kit extension): every key on disk. Credential-signing keys also say whether
 * they are published (DESIGN §4: retired keys stay until the last credential they signed expires).
 */
export function listKeys(ctx: Pick<AppContext, 'keys'> & { store: Pick<Store, 'issuances'> }) {
  return async (_req: Request, res: Response) => {
    const ring = ctx.keys.current();
    const published = new Set((await publishedSigningKeys(ring, ctx.store.issuances)).map((j) => j.kid));
    const signing = await Promise.all(
      ring.signingKeys.map(async (k) => {
        const last = await ctx.store.issuances.latestExpiryForKid(k.kid);
        return {
          ...describeKey(k),
          published: published.has(k.kid),
          lastCredentialExpiresAt: last?.toISOString() ?? null,
        };
      }),
    );
    // The partner JWKS lists every partner key (retired ones too), so all are published.
    const partner = ring.partnerKeys.map((k) => ({ ...describeKey(k), published: true }));
    res.json({ keys: [...signing, ...partner] });
  };
}

export const RotateKeyBodySchema = z.object({
  purpose: z
    .enum(['credential-signing', 'partner-jwt'], { error: 'must be credential-signing or partner-jwt' })
    .default('credential-signing'),
});

/**
 * `POST /admin/keys/rotate` (kit extension): retires the active key of a purpose, adds a new one
 * that signs from now on, reloads the ring and re-signs the status lists with the new key.
 */
export function rotateKeys(ctx: Pick<AppContext, 'keys' | 'config' | 'status'>) {
  let queue: Promise<unknown> = Promise.resolve();
  return async (req: Request, res: Response) => {
    const body = parseInput(RotateKeyBodySchema, req.body ?? {});
    // One rotation at a time: two at once would each retire the other's new key.
    const run = queue.then(() => rotate(body.purpose));
    queue = run.catch(() => {});
    res.json(await run);
  };

  async function rotate(purpose: KeyPurpose) {
    const now = new Date();
    const { retired, created } = await rotateKey(ctx.config.keysDir, purpose, now);
    await ctx.keys.reload();
    const lists = purpose === 'credential-signing' ? await ctx.status.publishAll() : [];
    return {
      purpose,
      created: describeKey(created),
      retired: retired.map((k) => ({ ...describeKey(k), retiredAt: now.toISOString(), active: false })),
      statusListsRepublished: lists.length,
    };
  }
}
