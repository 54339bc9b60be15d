import { AppError } from '../errors.js';
import type { ProofType } from '../model.js';
import type { LoadedSchema } from '../schemas/schema-registry.js';
import type { IssuanceCore } from './issuance-core.js';

/** The claims: given by the caller, or the schema's claims provider's for a user id. */
export type DirectClaims = { credentialSubject: Record<string, unknown> } | { claimsUserId: string };

/**
 * The caller's claims, or the schema's claims provider's for `claimsUserId` (undefined when it has
 * none for that user).
 */
export async function directClaims(
  core: Pick<IssuanceCore, 'lookupClaims'>,
  req: DirectClaims,
  schema: LoadedSchema,
  proofType: ProofType,
): Promise<Record<string, unknown> | undefined> {
  if ('credentialSubject' in req) return req.credentialSubject;
  const answer = await core.lookupClaims(schema, req.claimsUserId, proofType);
  if (!answer.eligible) return undefined;
  const { id: _id, ...claims } = answer.credentialSubject;
  return claims;
}

export const NOT_ELIGIBLE = (schemaId: string) =>
  `the claims provider has no ${schemaId} credential for this user`;

/** A user the claims provider has no credential of this schema for: 404, as in hosted issue-vc. */
export const notEligible = (schemaId: string): AppError =>
  new AppError('NOT_FOUND', `claimsUserId: ${NOT_ELIGIBLE(schemaId)}`, { field: 'claimsUserId' });
