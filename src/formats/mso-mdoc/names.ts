/**
 * ISO mdoc's names, for the floors below the format modules (the model, the schema loader, the
 * stores, the admin CLI's help): its proof type and the key of its schema-file block
 * (schema-block.ts), which a schema listing the proof type must have. It imports nothing.
 */
export const MSO_MDOC = 'MSO_MDOC';

export const MSO_MDOC_NAMES = { proofType: MSO_MDOC, block: 'mdoc', blockRequired: true } as const;
