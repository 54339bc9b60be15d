/**
 * ISO mdoc's names: its proof type and the key of its schema-file block
 * (schema-block.ts), which a schema listing the proof type must have. It imports nothing.
 */
export const MSO_MDOC = 'MSO_MDOC';

export const MSO_MDOC_NAMES = { proofType: MSO_MDOC, block: 'mdoc', blockRequired: true } as const;

declare module '../../model.js' {
  /** Its proof type among the model's (src/model.ts `ProofType`). */
  interface ProofTypes {
    MSO_MDOC: typeof MSO_MDOC_NAMES;
  }
}
