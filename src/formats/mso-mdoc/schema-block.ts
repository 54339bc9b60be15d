import { z } from 'zod';

/**
 * ISO mdoc's schema-file block (docs/schemas-and-claims.md "ISO mdoc"), which the formats' schema
 * file (src/formats/schema-file.ts) includes: it imports zod alone.
 */

/** An mdoc docType or namespace: reverse-domain text such as `org.iso.18013.5.1.mDL`. */
const ReverseDomain = z
  .string()
  .regex(
    /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$/,
    'must be a reverse-domain name like org.example.membership.1',
  );

export const MdocBlockSchema = z.strictObject({
  /** The document type the Mobile Security Object names (ISO/IEC 18013-5 §8.3.2.1.2.3). */
  docType: ReverseDomain,
  /** The namespace the claims are elements of; the docType when absent. */
  namespace: ReverseDomain.optional(),
  /** Per top-level claim, its data element identifier; a claim not listed keeps its own name. */
  elements: z.record(z.string(), z.string().min(1).max(128)).optional(),
});
export type MdocBlock = z.infer<typeof MdocBlockSchema>;

declare module '../../schemas/schema-file.js' {
  interface SchemaFileBlocks {
    mdoc?: MdocBlock | undefined;
  }
}
