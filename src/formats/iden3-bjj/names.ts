/**
 * Iden3 BJJ's names, for the floors below the format modules (the model, the schema loader, the
 * stores, the admin CLI's help): its proof type and the key of its schema-file block
 * (schema-block.ts), which a schema listing the proof type must have. It imports nothing.
 */
export const BJJ_SIG_2021 = 'BJJ_SIG_2021';

export const BJJ_SIG_2021_NAMES = { proofType: BJJ_SIG_2021, block: 'iden3', blockRequired: true } as const;
