import type { Request, Response } from 'express';
import { notFound } from '../../../errors.js';
import type { FormatPublicDocument } from '../../../formats/format.js';
import { type RouteFactory, TAGS } from '../route.js';

/**
 * The public documents the started formats add under the origin, one row each (mdoc:
 * `GET /.well-known/mdoc-iaca.pem`, its IACA certificate); none when no format adds one.
 */
export const formatDocumentRoutes: RouteFactory = (ctx) =>
  [...ctx.formats.started.values()].flatMap((started) =>
    (started.publicDocuments ?? []).map((document) => ({
      method: 'get' as const,
      path: document.path,
      group: 'public' as const,
      auth: 'none' as const,
      doc: {
        operationId: document.path.replace(/^\/(\.well-known\/)?/, '').replace(/[^A-Za-z0-9]+/g, '-'),
        summary: document.summary,
        tags: TAGS.public,
        responses: { 200: { description: document.summary, contentType: document.contentType } },
        errors: ['NOT_FOUND' as const],
      },
      handler: serve(document),
    })),
  );

function serve(document: FormatPublicDocument) {
  return async (_req: Request, res: Response) => {
    const body = document.body();
    if (body === undefined) throw notFound(`${document.path}: not configured`);
    res.status(200).type(document.contentType).send(Buffer.from(body));
  };
}
