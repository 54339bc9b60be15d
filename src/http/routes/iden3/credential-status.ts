import type { Request, Response } from 'express';
import { z } from 'zod';
import type { Iden3BjjIssuer } from '../../../formats/iden3-bjj/index.js';
import { parseInput } from '../../middleware/validate.js';
import { NonceSchema } from '../nonce.js';
import { json200, type RouteFactory, TAGS } from '../route.js';

/** docs/interface.md "Public routes": the `SparseMerkleTreeProof` answer Iden3 status resolvers read. */
export const CredentialStatusSchema = z.object({
  issuer: z.object({
    state: z.string(),
    claimsTreeRoot: z.string(),
    revocationTreeRoot: z.string(),
    rootOfRoots: z.string(),
  }),
  mtp: z.object({
    existence: z.boolean(),
    siblings: z.array(z.string()),
    node_aux: z.object({ key: z.string(), value: z.string() }).optional(),
  }),
});

/** `GET /credential-status/:nonce`, served while the Iden3 issuer is configured. */
export const credentialStatusRoute: RouteFactory = (ctx) =>
  ctx.iden3
    ? {
        method: 'get',
        path: '/credential-status/:nonce',
        group: 'public',
        auth: 'none',
        doc: {
          operationId: 'credential-status',
          summary: 'Iden3 revocation status with its Merkle proofs',
          tags: TAGS.public,
          params: { nonce: NonceSchema },
          responses: json200('Iden3 revocation status with its Merkle proofs', CredentialStatusSchema),
          errors: ['NOT_FOUND'],
        },
        handler: credentialStatus(ctx.iden3),
      }
    : [];

/**
 * `GET /credential-status/:nonce` (Iden3 SparseMerkleTreeProof): a real
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
