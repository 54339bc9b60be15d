import type { Request, Response } from 'express';
import { z } from 'zod';
import { parseHolderPublicKey } from '../envelope/index.js';
import type { IssuanceService } from '../issuance/issuance-service.js';
import { boundedText, HolderDidSchema, MAX_ID_BYTES, ProofTypeSchema } from '../model.js';
import { assertPublicKey, HolderBindingJwkSchema } from './holder-binding-key.js';
import { parseInput } from './validate.js';

// spec 4.6: unknown fields are ignored (zod strips them); wrong types are a 400 naming the field.
const userId = boundedText(MAX_ID_BYTES);
const proofType = z.enum(ProofTypeSchema.options, {
  error: `must be one of ${ProofTypeSchema.options.join(', ')}`,
});

export const AvailableVcBodySchema = z.object({
  holderDID: HolderDidSchema,
  pubKey: z.string().min(1).max(1024),
  userId,
  schemaId: z.string().min(1).max(255).optional(),
  proofType: proofType.optional(),
});
export type AvailableVcBody = z.infer<typeof AvailableVcBodySchema>;

export const IssueVcBodySchema = z
  .object({
    holderDID: HolderDidSchema,
    pubKey: z.string().min(1).max(1024).optional(),
    encryptionKey: z.string().min(1).max(1024).optional(),
    signingKey: z.object({ jwk: HolderBindingJwkSchema }).optional(),
    userId,
    schemaId: z.string().min(1).max(255),
    proofType: proofType.default('SD_JWT_VC'),
  })
  .check((ctx) => {
    if (ctx.value.pubKey === undefined && ctx.value.encryptionKey === undefined) {
      ctx.issues.push({
        code: 'custom',
        path: ['pubKey'],
        message: 'required unless encryptionKey is given',
        input: undefined,
      });
    }
  });
export type IssueVcBody = z.infer<typeof IssueVcBodySchema>;

/** spec 4.6 `POST /available-vc`. */
export function availableVc(issuance: IssuanceService) {
  return async (req: Request, res: Response) => {
    const body = parseInput(AvailableVcBodySchema, req.body);
    const pubKey = parseHolderPublicKey(body.pubKey, 'pubKey');
    const data = await issuance.availableVc({
      holderDid: body.holderDID,
      userId: body.userId,
      pubKey,
      schemaId: body.schemaId,
      proofType: body.proofType,
    });
    res.status(200).json({ data });
  };
}

/** spec 4.6 `POST /issue-vc`: 201 with an empty body once the envelope is stored upstream. */
export function issueVc(issuance: IssuanceService) {
  return async (req: Request, res: Response) => {
    const body = parseInput(IssueVcBodySchema, req.body);
    // encryptionKey wins when both are present (spec 4.6).
    const encryptTo =
      body.encryptionKey !== undefined
        ? parseHolderPublicKey(body.encryptionKey, 'encryptionKey')
        : parseHolderPublicKey(body.pubKey!, 'pubKey');
    const holderJwk = body.signingKey ? assertPublicKey(body.signingKey.jwk, 'signingKey.jwk') : undefined;
    await issuance.issueHosted({
      holderDid: body.holderDID,
      userId: body.userId,
      schemaId: body.schemaId,
      proofType: body.proofType,
      encryptTo,
      holderJwk,
    });
    res.status(201).end();
  };
}
