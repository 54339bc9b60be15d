import type { Channel, ProofType } from '../model.js';
import type { IssuanceRecord } from './issuance-store.js';
import type { RenewalLinks } from './renewal-store.js';

/** What admin tooling may see of an issuance: metadata only, never claims or the envelope. */
export type IssuanceSummary = Pick<
  IssuanceRecord,
  | 'credentialId'
  | 'channel'
  | 'holderDid'
  | 'schemaId'
  | 'proofType'
  | 'revocationNonce'
  | 'statusSlot'
  | 'kid'
  | 'createdAt'
  | 'expiresAt'
  | 'status'
  | 'revokedAt'
  | 'uploadState'
  | 'storagePath'
>;

/** Admin history filter on the derived status (revoked wins over expired, expired over suspended). */
export type HistoryStatusFilter =
  | 'valid'
  | 'revoked'
  | 'suspended'
  | 'expired'
  | 'upload_pending'
  | 'upload_failed';

/**
 * The sort key of a history row, (createdAt, id): `id` is the engine's insertion order (SQLite
 * rowid, PostgreSQL seq) and breaks createdAt ties. A keyset page starts after it.
 */
export interface HistoryCursor {
  createdAt: Date;
  id: number;
}

export interface HistoryQuery {
  /** OFFSET paging (docs/interface.md "Paging"): reads every row before the page. Unset: keyset paging. */
  page?: number | undefined;
  /** Keyset paging: the page starts after this row (unset: the first page). */
  after?: HistoryCursor | undefined;
  limit: number;
  order: 'createdAt_desc' | 'createdAt_asc';
  holderDid?: string | undefined;
  schemaId?: string | undefined;
  revocationNonce?: number | undefined;
  proofType?: ProofType | undefined;
  status?: HistoryStatusFilter | undefined;
  /** The keyed hash of a normalised email: direct issuances to that address only. */
  emailHash?: string | undefined;
  channel?: Channel | undefined;
  /** The batch it was issued in (issuances.batch_id: a CSV run's or an OpenID4VCI batch's). */
  batchId?: string | undefined;
  /** Created at or after. */
  createdFrom?: Date | undefined;
  /** Created before. */
  createdTo?: Date | undefined;
  /** Also count every matching row: one more query over all of them. */
  total?: boolean | undefined;
  now: Date;
}

/**
 * One page. A keyset page may hold fewer than `limit` records (even none) and still have a `next`:
 * the read stops after a bounded number of rows (docs/interface.md "Paging"). `next` is null at the end.
 */
export interface HistoryPage {
  records: IssuanceSummary[];
  next: HistoryCursor | null;
  total?: number | undefined;
}

/** Issuances recorded in one hour (`hour`: `YYYY-MM-DDTHH`, UTC) of one channel and proof type. */
export interface HourlyIssuances {
  hour: string;
  channel: Channel;
  proofType: ProofType;
  count: number;
}

export interface IssuanceHistoryStore {
  list(q: HistoryQuery): Promise<HistoryPage>;
  /**
   * The holder's credentials of a schema in one proof type that are neither revoked nor expired
   * (valid or suspended).
   */
  activeFor(holderDid: string, schemaId: string, proofType: ProofType, now: Date): Promise<IssuanceSummary[]>;
  /**
   * The renewal links of these credentials, both ways (issuances.renewed_from): the credential each
   * renews, and the one that renews it. Credentials with neither are absent.
   */
  renewalLinks(credentialIds: string[]): Promise<Map<string, RenewalLinks>>;
  /** The batch-issue run a credential was issued in (issuances.batch_id); null when none. */
  batchOf(credentialId: string): Promise<string | null>;
  /** Issuances created at or after `since`, per hour, channel and proof type (issuances_created; the console's chart). */
  issuancesPerHour(since: Date): Promise<HourlyIssuances[]>;
}
