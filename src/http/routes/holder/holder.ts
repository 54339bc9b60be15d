import type { Request, Response } from 'express';
import { z } from 'zod';
import { parseHolderPublicKey } from '../../../envelope/index.js';
import { channelFormat, formatsServing } from '../../../formats/index.js';
import { ProofTypeSchema } from '../../../formats/schema-file.js';
import { assertPublicKey, HolderBindingJwkSchema } from '../../../formats/sd-jwt-vc/holder-binding-key.js';
import type { HostedIssuanceService } from '../../../issuance/hosted-issuance.js';
import { boundedText, HolderDidSchema, MAX_ID_BYTES, type ProofType } from '../../../model.js';
import { parseInput } from '../../middleware/validate.js';
import { type RouteFactory, TAGS } from '../route.js';

// docs/interface.md "holder-facing routes": unknown fields are ignored (zod strips them); wrong
// types are a 400 naming the field.
const userId = boundedText(MAX_ID_BYTES);
// The hosting service's proof types only (docs/interface.md): an mdoc is offered through OpenID4VCI.
const HOSTED = formatsServing('hosted').map((f) => f.proofType) as [ProofType, ...ProofType[]];
const proofType = z.enum(HOSTED, {
  error: (issue) =>
    ProofTypeSchema.options.includes(issue.input as ProofType)
      ? `${String(issue.input)} is not issued through this door (its proof types are ${HOSTED.join(', ')}); offer it through OpenID4VCI`
      : `must be one of ${HOSTED.join(', ')}`,
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
    proofType: proofType.default(channelFormat('hosted')),
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

/** docs/interface.md "available-vc": one preview per schema and proof type, `credentialSubject` sealed to `pubKey`. */
export const AvailableVcAnswerSchema = z.object({
  data: z.array(
    z.object({
      holderDID: z.string(),
      schemaId: z.string(),
      credentialSubject: z.object({
        encryptedData: z.string(),
        iv: z.string(),
        authTag: z.string(),
        dataEncPublicKey: z.string(),
      }),
      proofType: z.enum(HOSTED),
    }),
  ),
});
export type AvailableVcAnswer = z.infer<typeof AvailableVcAnswerSchema>;

/** `POST /available-vc`: encrypted previews, one per schema and proof type the holder may ask for. */
export const availableVcRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/available-vc',
  group: 'holder',
  auth: 'api-key',
  doc: {
    operationId: 'available-vc',
    summary: 'Encrypted previews of the credentials a holder may ask for',
    tags: TAGS.holder,
    body: AvailableVcBodySchema,
    responses: {
      200: {
        description: '`{ data: [...] }`: one envelope-encrypted preview per schema and proof type',
        contentType: 'application/json',
        schema: AvailableVcAnswerSchema,
      },
    },
    errors: ['NOT_FOUND', 'UPSTREAM_UNAVAILABLE'],
  },
  handler: availableVc(ctx.hosted),
});

export function availableVc(issuance: HostedIssuanceService) {
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
    res.status(200).json({ data } satisfies AvailableVcAnswer);
  };
}

/** `POST /issue-vc`: 201 with an empty body once the envelope is stored upstream. */
export const issueVcRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/issue-vc',
  group: 'holder',
  auth: 'api-key',
  doc: {
    operationId: 'issue-vc',
    summary: 'Issue a credential to the holder; answered once the envelope is stored',
    tags: TAGS.holder,
    body: IssueVcBodySchema,
    responses: { 201: { description: 'Issued and stored by the hosting service (empty body)' } },
    errors: ['NOT_FOUND', 'CLAIMS_INVALID', 'UPSTREAM_UNAVAILABLE'],
  },
  handler: issueVc(ctx.hosted),
});

export function issueVc(issuance: HostedIssuanceService) {
  return async (req: Request, res: Response) => {
    const body = parseInput(IssueVcBodySchema, req.body);
    // encryptionKey wins when both are present (docs/interface.md "issue-vc").
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
