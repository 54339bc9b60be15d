import { databaseUnavailable } from '../store/database-unavailable.js';
import type { ClaimsStore } from '../store/store.js';
import type { ClaimsAnswer, ClaimsProvider, ClaimsQuery } from './claims-provider.js';

/** docs/schemas-and-claims.md provider "sqlite": the built-in claims table, filled by `admin claims import`. */
export class SqliteClaimsProvider implements ClaimsProvider {
  constructor(private readonly store: ClaimsStore) {}

  async lookup(query: ClaimsQuery): Promise<ClaimsAnswer> {
    const record = await this.store.getClaims(query.userId, query.schemaId).catch((err: unknown) => {
      // The table is the kit's own database: its outage is ours (503), not the claims source's (502).
      throw databaseUnavailable(err) ?? err;
    });
    if (!record) return { eligible: false };
    // An expiry in the past means the user is no longer eligible for a fresh credential.
    if (record.expiresAt && record.expiresAt.getTime() <= Date.now()) return { eligible: false };
    return { eligible: true, credentialSubject: record.claims, expiresAt: record.expiresAt ?? undefined };
  }
}
