import type { AuditAction } from '../model.js';

/** One row of the audit log. */
export interface AuditEntry {
  at: Date;
  actor: string;
  action: AuditAction;
  target: string;
  reason?: string | undefined;
  /** The bulk status change job the entry belongs to. */
  jobId?: string | undefined;
}

export interface AuditQuery {
  /** OFFSET paging, as for the history's query (src/store/history-store.ts); unset: keyset paging by id. */
  page?: number | undefined;
  /** Keyset paging: the page starts after the entry with this id (newest first: smaller ids). */
  after?: number | undefined;
  limit: number;
  action?: AuditAction | undefined;
  actor?: string | undefined;
  /** At or after. */
  from?: Date | undefined;
  /** Before. */
  to?: Date | undefined;
  total?: boolean | undefined;
}

/** One page of the audit log; `next` as in the history's page. */
export interface AuditPage {
  records: AuditEntry[];
  next: number | null;
  total?: number | undefined;
}

export interface AuditStore {
  /** For changes that are not one database transaction (key rotation writes files; publishing). */
  record(entry: AuditEntry): Promise<void>;
  /** Newest first. */
  list(q: AuditQuery): Promise<AuditPage>;
  /** Entries whose target is one of `targets`, newest first (audit_log_target; a credential's page in the console). */
  trail(targets: string[], limit: number): Promise<AuditEntry[]>;
}
