import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { AppError } from '../../../errors.js';
import type { InputProblem } from '../../../issuance/direct-input.js';
import { boundedText, MAX_ID_BYTES } from '../../../model.js';
import { unknownSchema } from '../../../schemas/schema-file.js';
import type { ClaimsRecord, Store } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { auditActor, ReasonField, SchemaIdField } from './fields.js';

export const ClaimsImportBodySchema = z.object({
  records: z
    .array(
      z.object({
        userId: boundedText(MAX_ID_BYTES),
        schemaId: SchemaIdField,
        claims: z.record(z.string(), z.unknown(), { error: 'must be an object' }),
        expiresAt: z.iso.datetime({ offset: true }).nullable().optional(),
      }),
    )
    .min(1)
    .max(1000),
  /** Check only: answers `{ upserted: 0 }` when every record is good. */
  dryRun: z.boolean().default(false),
  reason: ReasonField,
});

/** `POST /admin/claims`. */
export const claimsRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/claims',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-claims',
    summary: 'Import claims records into the sqlite claims provider',
    tags: TAGS.admin,
    body: ClaimsImportBodySchema,
    responses: json200('`{ upserted }`', z.object({ upserted: z.number().int() })),
    errors: ['CLAIMS_INVALID'],
  },
  handler: importClaims(ctx),
});

/**
 * `POST /admin/claims` (kit extension; the "sqlite" claims provider of docs/schemas-and-claims.md,
 * filled by `admin claims import`): upserts claims records after checking every one; nothing is written if any is bad.
 */
export function importClaims(ctx: Pick<AppContext, 'identity'> & { store: Pick<Store, 'claims'> }) {
  return async (req: Request, res: Response) => {
    const body = parseInput(ClaimsImportBodySchema, req.body);
    const badSchema: InputProblem[] = [];
    const badClaims: InputProblem[] = [];
    body.records.forEach((r, i) => {
      const schema = ctx.identity.catalog.schemas.get(r.schemaId);
      if (!schema) badSchema.push({ field: `records.${i}.schemaId`, message: unknownSchema(r.schemaId) });
      else if (schema.claims.provider !== 'sqlite')
        badSchema.push({
          field: `records.${i}.schemaId`,
          message: `schema ${r.schemaId} reads claims from its ${schema.claims.provider} provider, not the sqlite table`,
        });
      else {
        for (const p of schema.claimProblems(r.claims))
          badClaims.push({ field: `records.${i}.claims.${p.claim}`, message: p.message });
      }
    });
    if (badSchema.length > 0) {
      throw new AppError('INVALID_PARAMETER', `${badSchema[0]!.field}: ${badSchema[0]!.message}`, {
        field: badSchema[0]!.field,
        issues: badSchema,
      });
    }
    if (badClaims.length > 0) {
      throw new AppError('CLAIMS_INVALID', `${badClaims.length} claims do not fit their schema`, {
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
    res.json({ upserted: await ctx.store.claims.upsertClaims(records, auditActor(res, body.reason)) });
  };
}
