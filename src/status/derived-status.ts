import type { CredentialStatus } from '../model.js';

export type DerivedStatus = 'valid' | 'revoked' | 'suspended' | 'expired';

/** Revoked is final; an expired credential is expired whether or not it was suspended. */
export function derivedStatus(r: { status: CredentialStatus; expiresAt: Date }, now: Date): DerivedStatus {
  if (r.status === 1) return 'revoked';
  if (r.expiresAt.getTime() <= now.getTime()) return 'expired';
  return r.status === 2 ? 'suspended' : 'valid';
}
