import { z } from 'zod';

/**
 * Iden3 BJJ's schema-file block (docs/schemas-and-claims.md), read by the schema loader below the
 * format modules: it imports zod alone.
 */
export const Iden3BlockSchema = z.object({
  type: z.string().min(1),
  contextUrl: z.url(),
  contextFile: z.string().min(1),
  jsonSchemaUrl: z.url(),
});
