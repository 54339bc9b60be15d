import type { Request, Response } from 'express';
import type { ServedTypeMetadata } from '../../../schemas/type-metadata.js';
import { publicDoc, type RouteFactory } from '../route.js';

/** One `GET <vct path>` per schema whose vct is under ISSUER_ORIGIN. */
export const typeMetadataRoutes: RouteFactory = (ctx) =>
  [...ctx.typeMetadata.values()].map((served) => ({
    method: 'get',
    path: served.path,
    group: 'public',
    auth: 'none',
    doc: publicDoc(
      `type-metadata${served.path.replace(/[^A-Za-z0-9]+/g, '-')}`,
      'SD-JWT VC type metadata of this vct',
    ),
    handler: typeMetadata(served),
  }));

/**
 * `GET <vct path>`: the SD-JWT VC type metadata of one schema (draft-ietf-oauth-sd-jwt-vc §6), as the exact bytes that
 * `vct#integrity` in its credentials digests.
 */
export function typeMetadata(served: ServedTypeMetadata) {
  return (_req: Request, res: Response) => {
    res.type('application/json').set('Cache-Control', 'public, max-age=300').send(served.body);
  };
}
