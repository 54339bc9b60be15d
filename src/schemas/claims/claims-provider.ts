import type { ProofType } from '../schema-file.js';

export interface ClaimsQuery {
  userId: string;
  schemaId: string;
  proofType: ProofType;
}

export type ClaimsAnswer =
  | { eligible: false }
  | { eligible: true; credentialSubject: Record<string, unknown>; expiresAt?: Date | undefined };

/**
 * A source of claims (DESIGN §8). An outage must throw (it becomes 502), never answer
 * `eligible: false`. Implement this in a module and point a schema's `claims.path` at it.
 */
export interface ClaimsProvider {
  lookup(query: ClaimsQuery): Promise<ClaimsAnswer>;
}

/** Thrown by providers when the source of claims cannot answer (timeout, non-200, malformed). */
export class ClaimsSourceError extends Error {
  override name = 'ClaimsSourceError';
}
