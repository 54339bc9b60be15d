import type { NextFunction, Request, Response } from 'express';
import type { ServedTypeMetadata, TypeMetadataRegistry } from '../schemas/type-metadata.js';

/**
 * Matches `GET <vct path>` against the current schema set's type metadata (a reload changes the
 * paths); any other path passes on to the next route.
 */
export function typeMetadataMatch(registry: TypeMetadataRegistry) {
  return (req: Request, res: Response, next: NextFunction) => {
    for (const served of registry.values()) {
      if (served.path !== req.path) continue;
      res.locals.typeMetadata = served;
      return next();
    }
    next('route');
  };
}

/**
 * `GET <vct path>`: the SD-JWT VC type metadata of one schema (draft-ietf-oauth-sd-jwt-vc "Type
 * Metadata"), as the exact bytes that `vct#integrity` in its credentials digests.
 */
export function sendTypeMetadata(_req: Request, res: Response) {
  const served = res.locals.typeMetadata as ServedTypeMetadata;
  res.type('application/json').set('Cache-Control', 'public, max-age=300').send(served.body);
}
