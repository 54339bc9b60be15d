import type { Request, Response } from 'express';
import { z } from 'zod';
import type { Iden3BjjIssuer } from '../../../issuers/iden3/index.js';
import { parseInput } from '../../middleware/validate.js';
import { NonceSchema } from '../nonce.js';

/**
 * DESIGN §4 `GET /credential-status/:nonce` (Iden3 SparseMerkleTreeProof): a real
 * (non-)membership proof of the nonce in the persisted revocation tree at the latest state.
 * Like issuer-node it answers any nonce: an unknown one simply has a non-membership proof.
 */
export function credentialStatus(iden3: Iden3BjjIssuer) {
  return async (req: Request, res: Response) => {
    const { nonce } = parseInput(z.object({ nonce: NonceSchema }), req.params, 'query');
    res.set('Cache-Control', 'no-cache');
    res.json(await iden3.credentialStatus(nonce));
  };
}
