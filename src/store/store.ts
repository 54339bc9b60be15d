import type {
  AuditAction,
  AuditActor,
  Channel,
  CredentialStatus,
  StatusChange,
  StatusSlot,
  UploadState,
} from '../model.js';
import type { AuditStore } from './audit-store.js';
import type { ClaimsStore } from './claims-store.js';
import type { CompromisedKeyStore } from './compromised-key-store.js';
import type { ConsoleSessionStore } from './console-session-store.js';
import type { IssuanceHistoryStore } from './history-store.js';
import type { IdempotencyStore } from './idempotency-store.js';
import type { Iden3Store } from './iden3-store.js';
import type { IssuanceStore } from './issuance-store.js';
import type { KeyMaterialStore } from './key-material-store.js';
import type { MetaStore } from './meta-store.js';
import type { NamedLockStore } from './named-lock-store.js';
import type { Oid4vciAuthorizationStore } from './oid4vci-authorization-store.js';
import type { Oid4vciStore } from './oid4vci-store.js';
import type { RenewalLinks, RenewalStore } from './renewal-store.js';
import type { StatusJobStore } from './status-job-store.js';
import type { StatusStore } from './status-store.js';
import type { WebhookStore } from './webhook-store.js';

export type * from './audit-store.js';
export type * from './claims-store.js';
export type * from './console-session-store.js';
export type * from './history-store.js';
export type * from './idempotency-store.js';
export type * from './iden3-store.js';
export type * from './issuance-store.js';
export type * from './key-material-store.js';
export type * from './meta-store.js';
export type * from './named-lock-store.js';
export type * from './oid4vci-authorization-store.js';
export type * from './oid4vci-store.js';
export type * from './status-store.js';
export type {
  AuditAction,
  AuditActor,
  Channel,
  CredentialStatus,
  RenewalLinks,
  StatusChange,
  StatusSlot,
  UploadState,
};

/**
 * Storage interfaces. Async so that a networked engine (PostgreSQL) can implement them;
 * `sqlite/` is the embedded default. A new engine is one folder implementing `Store` and
 * `StorageEngine` (src/store/engine.ts), listed in src/store/engines.ts. `Store` is the aggregate;
 * each part's interface is in a file of its own beside this one (`issuance-store.ts`, ...), and is
 * re-exported here.
 */
export interface Store {
  /** The engine's name (`sqlite`, `postgres`): logs and tests only; code asks for the parts below. */
  kind: string;
  issuances: IssuanceStore;
  audit: AuditStore;
  meta: MetaStore;
  status: StatusStore;
  claims: ClaimsStore;
  history: IssuanceHistoryStore;
  idempotency: IdempotencyStore;
  iden3: Iden3Store;
  /**
   * Private keys kept in the database, sealed, shared by every instance. Absent: the keys are
   * files in KEYS_DIR (one machine).
   */
  keys?: KeyMaterialStore | undefined;
  /** Leased locks shared by every process on the database (instances, or WORKERS=N on one file). */
  locks: NamedLockStore;
  webhooks: WebhookStore;
  oid4vci: Oid4vciStore;
  /** The OpenID4VCI authorization code flow's requests, sign-ins, codes and refresh tokens. */
  oid4vciAuthorizations: Oid4vciAuthorizationStore;
  /** Bulk status change jobs (docs/operations.md "Bulk status changes"). */
  statusJobs: StatusJobStore;
  /** Signing keys declared compromised, never published again. */
  compromisedKeys: CompromisedKeyStore;
  /** What renewing each direct credential needs, and what came of it (docs/operations.md "Renewal"). */
  renewals: RenewalStore;
  /** The admin console's sign-ins. */
  consoleSessions: ConsoleSessionStore;
  /**
   * One round trip to the database (readiness); rejects when it cannot answer, and, given
   * `timeoutMs`, when it does not answer within it (the connection is then given up).
   */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}
