/**
 * SD-JWT VC's names, for the floors below the format modules (the model, the schema loader, the
 * stores, the admin CLI's help): its proof type and the key of its schema-file block
 * (schema-block.ts). It imports nothing.
 */
export const SD_JWT_VC = 'SD_JWT_VC';

export const SD_JWT_VC_NAMES = { proofType: SD_JWT_VC, block: 'sdJwt', blockRequired: false } as const;
