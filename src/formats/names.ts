import { BJJ_SIG_2021_NAMES } from './iden3-bjj/names.js';
import { MSO_MDOC_NAMES } from './mso-mdoc/names.js';
import { SD_JWT_VC_NAMES } from './sd-jwt-vc/names.js';

/**
 * The credential formats' names (each format's `names.ts`), in the order of `FORMATS`
 * (src/formats/index.ts; a unit test holds the two lists together), for the schema file and the
 * edges that validate a proof type. It imports nothing else, so the admin CLI's help reads it
 * without loading zod or the format modules.
 */
export const FORMAT_NAMES = [SD_JWT_VC_NAMES, BJJ_SIG_2021_NAMES, MSO_MDOC_NAMES] as const;

/** Every proof type, as published (schema files, request bodies, stored columns, responses). */
export const PROOF_TYPES = FORMAT_NAMES.map((f) => f.proofType) as [
  (typeof FORMAT_NAMES)[number]['proofType'],
  ...(typeof FORMAT_NAMES)[number]['proofType'][],
];
