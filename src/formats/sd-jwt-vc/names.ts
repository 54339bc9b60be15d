/**
 * SD-JWT VC's names: its proof type and the key of its schema-file block
 * (schema-block.ts). It imports nothing.
 */
export const SD_JWT_VC = 'SD_JWT_VC';

export const SD_JWT_VC_NAMES = { proofType: SD_JWT_VC, block: 'sdJwt', blockRequired: false } as const;

declare module '../../model.js' {
  /** Its proof type among the model's (src/model.ts `ProofType`). */
  interface ProofTypes {
    SD_JWT_VC: typeof SD_JWT_VC_NAMES;
  }
}
