import { z } from 'zod';
import type { ProofType } from '../model.js';

export interface ClaimsQuery {
  userId: string;
  schemaId: string;
  proofType: ProofType;
}

export type ClaimsAnswer =
  | { eligible: false }
  | { eligible: true; credentialSubject: Record<string, unknown>; expiresAt?: Date | undefined };

/**
 * "Eligible, but the claims are not ready yet" (docs/schemas-and-claims.md): the OpenID4VCI
 * channel defers the credential (OpenID4VCI 1.0 §9) and asks again when the wallet polls; the other
 * channels answer 503, try again. `retryAfterSeconds`: when to ask again (the wallet's `interval`).
 */
export interface ClaimsPending {
  eligible: true;
  pending: true;
  retryAfterSeconds?: number | undefined;
}

/** What a provider may answer: the claims, not eligible, or (an addition) pending. */
export type ProviderAnswer = ClaimsAnswer | ClaimsPending;

export const isPending = (answer: ProviderAnswer): answer is ClaimsPending =>
  answer.eligible && 'pending' in answer && answer.pending === true;

/**
 * A source of claims (docs/schemas-and-claims.md). An outage must throw (it becomes 502), never answer
 * `eligible: false`. Implement this in a module and point a schema's `claims.path` at it.
 */
export interface ClaimsProvider {
  lookup(query: ClaimsQuery): Promise<ProviderAnswer>;
}

/** Thrown by providers when the source of claims cannot answer (timeout, non-200, malformed). */
export class ClaimsSourceError extends Error {
  override name = 'ClaimsSourceError';
}

// docs/schemas-and-claims.md: `{ eligible: false }`, `{ eligible: true, credentialSubject, expiresAt? }` or
// `{ eligible: true, pending: true, retryAfterSeconds? }`. An ISO
// date-time (a missing offset means UTC) or date; a module provider may also give a Date.
const IsoInstant = z.union([z.iso.datetime({ offset: true, local: true }), z.iso.date(), z.date()]);
const AnswerSchema = z.union([
  z.object({ eligible: z.literal(false) }),
  // Before the ready shape: a pending answer that also carries claims is still pending.
  z.object({
    eligible: z.literal(true),
    pending: z.literal(true),
    retryAfterSeconds: z.number().int().min(1).max(86_400).optional(),
  }),
  z.object({
    eligible: z.literal(true),
    credentialSubject: z.record(z.string(), z.unknown()),
    expiresAt: IsoInstant.optional(),
  }),
]);

/** Checks a provider's answer; anything else is an upstream error (502), never "not eligible". */
export function parseClaimsAnswer(body: unknown): ProviderAnswer {
  const parsed = AnswerSchema.safeParse(body);
  if (!parsed.success) {
    throw new ClaimsSourceError(
      'claims source answer does not match { eligible, credentialSubject?, expiresAt? }',
    );
  }
  const answer = parsed.data;
  if (!answer.eligible) return { eligible: false };
  if ('pending' in answer)
    return {
      eligible: true,
      pending: true,
      ...(answer.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: answer.retryAfterSeconds }),
    };
  return {
    eligible: true,
    credentialSubject: answer.credentialSubject,
    expiresAt: toInstant(answer.expiresAt),
  };
}

function toInstant(value: string | Date | undefined): Date | undefined {
  if (value === undefined || value instanceof Date) return value;
  // A date alone is midnight UTC; a date-time without an offset is read as UTC.
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(value)
    ? `${value}T00:00:00Z`
    : /(Z|[+-]\d{2}:\d{2})$/i.test(value)
      ? value
      : `${value}Z`;
  return new Date(iso);
}
