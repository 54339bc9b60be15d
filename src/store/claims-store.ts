import type { AuditActor } from '../model.js';

export interface ClaimsRecord {
  userId: string;
  schemaId: string;
  claims: Record<string, unknown>;
  expiresAt: Date | null;
}

export interface ClaimsStore {
  getClaims(userId: string, schemaId: string): Promise<ClaimsRecord | undefined>;
  /** With `audit`, a `claims.import` audit row commits with the records. */
  upsertClaims(records: ClaimsRecord[], audit?: AuditActor): Promise<number>;
  countClaims(): Promise<number>;
}
