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
 * A source of claims (docs/schemas-and-claims.md). An outage must throw (it becomes 502), never answer
 * `eligible: false`. Implement this in a module and point a schema's `claims.path` at it.
 */
export interface ClaimsProvider {
  lookup(query: ClaimsQuery): Promise<ClaimsAnswer>;
}

/** Thrown by providers when the source of claims cannot answer (timeout, non-200, malformed). */
export class ClaimsSourceError extends Error {
  override name = 'ClaimsSourceError';
}

// docs/schemas-and-claims.md: `{ eligible: false }` or `{ eligible: true, credentialSubject, expiresAt? }`. An ISO
// date-time (a missing offset means UTC) or date; a module provider may also give a Date.
const IsoInstant = z.union([z.iso.datetime({ offset: true, local: true }), z.iso.date(), z.date()]);
const AnswerSchema = z.union([
  z.object({ eligible: z.literal(false) }),
  z.object({
    eligible: z.literal(true),
    credentialSubject: z.record(z.string(), z.unknown()),
    expiresAt: IsoInstant.optional(),
  }),
]);

/** Checks a provider's answer; anything else is an upstream error (502), never "not eligible". */
export function parseClaimsAnswer(body: unknown): ClaimsAnswer {
  const parsed = AnswerSchema.safeParse(body);
  if (!parsed.success) {
    throw new ClaimsSourceError(
      'claims source answer does not match { eligible, credentialSubject?, expiresAt? }',
    );
  }
  const answer = parsed.data;
  if (!answer.eligible) return { eligible: false };
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
