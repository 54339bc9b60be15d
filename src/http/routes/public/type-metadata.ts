import express, { type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import type { SchemaCatalog } from '../../../catalog/schema-catalog.js';
import { TypeDisplaySchema } from '../../../formats/sd-jwt-vc/schema-block.js';
import type { ServedTypeMetadata } from '../../../schemas/type-metadata.js';
import { publicDoc, type RouteFactory } from '../route.js';

/** SD-JWT VC type metadata (draft-ietf-oauth-sd-jwt-vc §6) as `formats/sd-jwt-vc/type-metadata.ts` writes it. */
export const TypeMetadataSchema = z.object({
  vct: z.string(),
  name: z.string(),
  description: z.string().optional(),
  display: z.array(TypeDisplaySchema),
  claims: z.array(
    z.object({
      path: z.array(z.string()),
      display: z.array(
        z.object({ locale: z.string(), label: z.string(), description: z.string().optional() }),
      ),
      sd: z.enum(['always', 'never']),
    }),
  ),
  /** The schema's credentialSubject JSON Schema, allowing the payload's other claims. */
  schema: z.record(z.string(), z.unknown()),
});

/**
 * One `GET <vct path>` per schema whose vct is under ISSUER_ORIGIN, in `/openapi.json`. They are
 * served by `currentTypeMetadata` (below), from the schema set current at each request.
 */
export const typeMetadataRoutes: RouteFactory = (ctx) =>
  [...ctx.identity.catalog.typeMetadata.values()].map((served) => ({
    method: 'get',
    path: served.path,
    group: 'public',
    auth: 'none',
    mountedByPath: true,
    doc: publicDoc(
      `type-metadata${served.path.replace(/[^A-Za-z0-9]+/g, '-')}`,
      'SD-JWT VC type metadata of this vct',
      TypeMetadataSchema,
    ),
    handler: typeMetadata(served),
  }));

/**
 * `GET <vct path>`: the SD-JWT VC type metadata of one schema (draft-ietf-oauth-sd-jwt-vc §6), as
 * the exact bytes that `vct#integrity` in its credentials digests.
 */
export function typeMetadata(served: ServedTypeMetadata) {
  return (_req: Request, res: Response) => {
    res.type('application/json').set('Cache-Control', 'public, max-age=300').send(served.body);
  };
}

/**
 * The type metadata paths of the current schema set: one router per set, built when a request
 * first meets that set (a path no schema has passes on; a route of the table mounted before wins).
 * A schema reload changes the paths without a restart.
 */
export function currentTypeMetadata(
  catalog: Pick<SchemaCatalog, 'current'>,
  before: readonly RequestHandler[],
): RequestHandler {
  const routers = new WeakMap<object, express.Router>();
  return (req, res, next) => {
    const served = catalog.current().typeMetadata;
    let router = routers.get(served);
    if (!router) {
      router = express.Router({ caseSensitive: true, strict: true });
      for (const s of served.values()) router.get(s.path, ...before, typeMetadata(s));
      routers.set(served, router);
    }
    router(req, res, next);
  };
}
