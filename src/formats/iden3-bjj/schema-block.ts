import { z } from 'zod';

/**
 * Iden3 BJJ's schema-file block (docs/schemas-and-claims.md), which the formats' schema file
 * (src/formats/schema-file.ts) includes: it imports zod alone.
 */
export const Iden3BlockSchema = z.object({
  type: z.string().min(1),
  contextUrl: z.url(),
  contextFile: z.string().min(1),
  jsonSchemaUrl: z.url(),
});
export type Iden3Block = z.infer<typeof Iden3BlockSchema>;

declare module '../../schemas/schema-file.js' {
  interface SchemaFileBlocks {
    iden3?: Iden3Block | undefined;
  }
}
