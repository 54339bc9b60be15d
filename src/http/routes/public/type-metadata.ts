import type { Request, Response } from 'express';
import type { ServedTypeMetadata } from '../../../schemas/type-metadata.js';

/**
 * `GET <vct path>`: the SD-JWT VC type metadata of one schema (issue 14), as the exact bytes that
 * `vct#integrity` in its credentials digests.
 */
export function typeMetadata(served: ServedTypeMetadata) {
  return (_req: Request, res: Response) => {
    res.type('application/json').set('Cache-Control', 'public, max-age=300').send(served.body);
  };
}
