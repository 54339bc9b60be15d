import type { AuditActor } from '../model.js';

/**
 * Signing keys declared compromised (docs/operations.md "A signing key is compromised"): kept in
 * the database, whatever holds the keys themselves, so every instance stops publishing such a key
 * at its next read of the issuer metadata.
 */
export interface CompromisedKey {
  kid: string;
  at: Date;
  actor: string;
  reason: string;
}

/** What the playbook did for a kid: the key it rotated to, the status lists it re-signed, its revoke job. */
export interface CompromiseOutcome {
  rotatedTo: string | null;
  statusListsRepublished: number;
  jobId: string;
}

export interface CompromisedKeyStore {
  /** The compromised kids, oldest first. */
  list(): Promise<CompromisedKey[]>;
  /**
   * Records `kid` as compromised, with its `keys.compromised` audit row, in one transaction; false
   * (and nothing written) when it was recorded before.
   */
  mark(kid: string, at: Date, audit: AuditActor & { reason: string }): Promise<boolean>;
  /** What the playbook recorded for `kid` once its revoke job existed; undefined before. */
  outcome(kid: string): Promise<CompromiseOutcome | undefined>;
  /** Records what the playbook did for `kid` (a marked kid). */
  recordOutcome(kid: string, outcome: CompromiseOutcome): Promise<void>;
}
