import { type ClaimsAnswer, isPending } from '../claims/index.js';
import { AppError } from '../errors.js';
import type { ProofType } from '../model.js';
import type { LoadedSchema } from '../schemas/schema-registry.js';
import { credentialRequestDenied } from './errors.js';
import { PROOF_TYPE } from './metadata.js';
import type { ChannelParts } from './parts.js';

/**
 * The claims provider's claims for `userId`, checked against the schema (404 when it has none):
 * an offer's claims unless the admin gave them.
 */
export async function providerClaims(
  parts: ChannelParts,
  schema: LoadedSchema,
  userId: string,
  /** The offer's format: the provider is asked for that proof type. */
  proofType: ProofType = PROOF_TYPE,
): Promise<Record<string, unknown>> {
  const answer = await parts.deps.core.lookupClaims(schema, userId, proofType);
  return checkedClaims(parts, schema, answer);
}

/** The provider's claims, or its "not ready yet" (a credential request defers on it). */
export type ClaimsOrPending =
  | { pending: false; claims: Record<string, unknown> }
  | { pending: true; retryAfterSeconds?: number | undefined };

/** As `providerClaims`, but a pending answer is given back instead of refused. */
export async function providerClaimsOrPending(
  parts: ChannelParts,
  schema: LoadedSchema,
  userId: string,
  proofType: ProofType = PROOF_TYPE,
): Promise<ClaimsOrPending> {
  const answer = await parts.deps.core.lookupClaimsOrPending(schema, userId, proofType);
  if (isPending(answer)) return { pending: true, retryAfterSeconds: answer.retryAfterSeconds };
  return { pending: false, claims: checkedClaims(parts, schema, answer) };
}

function checkedClaims(
  parts: ChannelParts,
  schema: LoadedSchema,
  answer: ClaimsAnswer,
): Record<string, unknown> {
  if (!answer.eligible)
    throw new AppError(
      'NOT_FOUND',
      `userId: the claims provider has no ${schema.schemaId} credential for this user`,
      {
        field: 'userId',
      },
    );
  const { id: _id, ...claims } = answer.credentialSubject;
  parts.deps.identity.catalog.schemas.assertClaims(schema, claims);
  return claims;
}

/** A claims lookup that fails at redemption: the wallet is refused, not told why. */
export function denied(err: unknown): never {
  if (err instanceof AppError && err.status < 500)
    throw credentialRequestDenied('the issuer has no such credential for this offer any more');
  throw err;
}
