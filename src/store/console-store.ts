import type { Channel, ProofType } from '../model.js';
import type { AuditEntry } from './audit-store.js';

/** A signed-in console session (the cookie's value is never stored, only its SHA-256). */
export interface ConsoleSessionRecord {
  actor: string;
  /** The fingerprint of the admin key that opened it (null: a console sign-in recorded before migrations 022/027 added the column). */
  keyHash: string | null;
  createdAt: Date;
  lastSeenAt: Date;
}

/** When a console session ends: `idleMs` after its last request, `absoluteMs` after its sign-in. */
export interface ConsoleSessionLimits {
  idleMs: number;
  absoluteMs: number;
}

/** Issuances recorded in one hour (`hour`: `YYYY-MM-DDTHH`, UTC) of one channel and proof type. */
export interface HourlyIssuances {
  hour: string;
  channel: Channel;
  proofType: ProofType;
  count: number;
}

/** The admin console's sessions (shared by every instance) and its own reads, each through an index. */
export interface ConsoleStore {
  createSession(idHash: string, actor: string, keyHash: string, at: Date): Promise<void>;
  /**
   * The live console sign-in under `idHash`, its last request moved to `now`; undefined when there is none
   * or it has ended (idle or too old), and then it is removed.
   */
  useSession(
    idHash: string,
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<ConsoleSessionRecord | undefined>;
  /** Removes the session under `idHash`; answers whether there was one. */
  endSession(idHash: string): Promise<boolean>;
  /** The live console sign-ins (not idle, not too old), oldest first, with their `idHash`. */
  listSessions(
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<Array<ConsoleSessionRecord & { idHash: string }>>;
  /** Removes every console sign-in that has ended; answers how many. */
  endExpiredSessions(now: Date, limits: ConsoleSessionLimits): Promise<number>;
  /** Issuances created at or after `since`, per hour, channel and proof type (issuances_created). */
  issuancesPerHour(since: Date): Promise<HourlyIssuances[]>;
  /** Audit entries whose target is one of `targets`, newest first (audit_log_target). */
  auditTrail(targets: string[], limit: number): Promise<AuditEntry[]>;
}
