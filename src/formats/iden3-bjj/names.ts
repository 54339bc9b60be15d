/**
 * Iden3 BJJ's names: its proof type and the key of its schema-file block
 * (schema-block.ts), which a schema listing the proof type must have. It imports nothing.
 */
export const BJJ_SIG_2021 = 'BJJ_SIG_2021';

export const BJJ_SIG_2021_NAMES = { proofType: BJJ_SIG_2021, block: 'iden3', blockRequired: true } as const;

declare module '../../model.js' {
  /** Its proof type among the model's (src/model.ts `ProofType`). */
  interface ProofTypes {
    BJJ_SIG_2021: typeof BJJ_SIG_2021_NAMES;
  }
}
