import type { Request, Response } from 'express';
import { z } from 'zod';
import { reloadAndLog } from '../../../catalog/schema-catalog.js';
import type { AppContext } from '../../../context.js';
import { AppError } from '../../../errors.js';
import { ProofTypeSchema } from '../../../formats/schema-file.js';
import type { LoadedSchema } from '../../../schemas/schema-registry.js';
import { parseInput } from '../../middleware/validate.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { auditActor, ReasonField } from './fields.js';

export const SchemasReloadBodySchema = z.object({ reason: ReasonField });

/** A schema of the set served: what a reload answers (and, on failure, keeps). */
export const ServedSchemaSchema = z.object({
  schemaId: z.string(),
  proofTypes: z.array(ProofTypeSchema),
  vct: z.string(),
  file: z.string(),
});

const describe = (s: LoadedSchema): z.infer<typeof ServedSchemaSchema> => ({
  schemaId: s.schemaId,
  proofTypes: s.proofTypes,
  vct: s.sdJwt.vct,
  file: s.file,
});

/** `POST /admin/schemas/reload`. */
export const reloadSchemasRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/schemas/reload',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-schemas-reload',
    summary: 'Read SCHEMAS_DIR again; a set with a bad file is refused and the previous one kept',
    tags: TAGS.admin,
    body: SchemasReloadBodySchema,
    responses: json200(
      '`{ schemas: [{ schemaId, proofTypes, vct, file }] }`: the set now served',
      z.object({ schemas: z.array(ServedSchemaSchema) }),
    ),
    errors: ['SCHEMAS_INVALID'],
  },
  handler: reloadSchemas(ctx),
});

/**
 * `POST /admin/schemas/reload` (docs/schemas-and-claims.md "Reloading schemas"): reads SCHEMAS_DIR
 * again and swaps the new set in whole. 200 `{ schemas }` names the set now served; when any file
 * fails, 422 `SCHEMAS_INVALID` with `details: { problems: [{ file, message }], schemas }` and the
 * previous set (`schemas`) is still served. Audited either way; with WORKERS=N the other workers
 * reload too.
 */
export function reloadSchemas(ctx: Pick<AppContext, 'schemaCatalog' | 'store' | 'log'>) {
  return async (req: Request, res: Response) => {
    const body = parseInput(SchemasReloadBodySchema, req.body ?? {});
    const actor = auditActor(res, body.reason);
    const outcome = await reloadAndLog(ctx.schemaCatalog, ctx.log, `admin ${actor.actor}`);
    ctx.schemaCatalog.propagate?.();
    const ids = outcome.schemas.map((s) => s.schemaId).join(', ');
    await ctx.store.audit.record({
      ...actor,
      at: new Date(),
      action: 'schemas.reload',
      target: outcome.ok
        ? `loaded: ${ids}`
        : `failed (${outcome.problems.length} problem${outcome.problems.length === 1 ? '' : 's'}); kept: ${ids}`,
    });
    if (!outcome.ok)
      throw new AppError(
        'SCHEMAS_INVALID',
        `schemas: the reload found ${outcome.problems.length} problem(s); the previous set is still served`,
        { problems: outcome.problems, schemas: outcome.schemas.map(describe) },
      );
    res.json({ schemas: outcome.schemas.map(describe) });
  };
}
