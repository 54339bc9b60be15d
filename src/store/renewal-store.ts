import type { AuditActor } from '../model.js';
import type { NewWebhookEvent } from './webhook-store.js';

/**
 * What renewing a direct credential needs and what came of it (docs/operations.md "Renewal"): one
 * row per direct credential, written before it is signed. The recipient's email is kept only
 * sealed under KEY_ENCRYPTION_KEY, bound to the credential id
 * (docs/security.md "What renewal keeps"); a credential issued before renewal existed has a row
 * without it.
 */
export interface RenewalSource {
  credentialId: string;
  schemaId: string;
  expiresAt: Date;
  /** The sealed recipient email (src/keys/sealed-key.ts, purpose `recipient-email`); null: none kept. */
  recipientSealed: string | null;
  /** The claims provider's user id the credential's claims came from; null: the caller gave them. */
  claimsUserId: string | null;
}

/**
 * `renewed`: a new credential renews it; `ineligible`: the claims provider said no;
 * `not_renewable`: no sealed recipient, or one that did not open (cleared when `keys reseal`
 * leaves it opening with the current key).
 */
export type RenewalOutcome = 'renewed' | 'ineligible' | 'not_renewable';

export interface RenewalRecord extends RenewalSource {
  outcome: RenewalOutcome | null;
  renewedBy: string | null;
  outcomeAt: Date | null;
  detail: string | null;
}

/** The expiries one sweep takes (docs/operations.md "Renewal"); `finishSince` <= `from` <= `until`. */
export interface DueWindow {
  /** Renewals cut short of credentials that expired after this are finished (RENEWAL_FINISH_GRACE_DAYS before now). */
  finishSince: Date;
  /** Now: credentials expiring after it are renewed. */
  from: Date;
  /** The end of the schema's renewal window (now + `beforeExpirySeconds`). */
  until: Date;
}

export interface RenewalOutcomeWrite {
  outcome: RenewalOutcome;
  renewedBy?: string | undefined;
  detail: string;
  at: Date;
  /** Its audit row (`renew` or `renewal.skipped`, target: the credential renewed or skipped). */
  audit: AuditActor & { action: 'renew' | 'renewal.skipped' };
  /** `credential.renewed`, written while an endpoint exists. */
  event?: NewWebhookEvent | undefined;
}

export interface RenewalStore {
  /** Keeps a direct credential's source (before it is signed); a row already there stays as it is. */
  addSource(source: RenewalSource): Promise<void>;
  /** Drops the source of a credential whose signing failed, unless a credential is recorded under its id. */
  dropSource(credentialId: string): Promise<void>;
  get(credentialId: string): Promise<RenewalRecord | undefined>;
  /**
   * Credentials of `schemaId` a sweep should take, soonest expiry first: direct, with no outcome
   * yet, and either valid (status 0) and expiring after `window.from` and at or before
   * `window.until` (to renew), or with a renewing credential recorded (a renewal cut short, to
   * finish) and expiring after `window.finishSince` and at or before `window.until`. A read of
   * `renewals_due` between those two bounds: expirations older than `finishSince` are never read.
   */
  due(schemaId: string, window: DueWindow, limit: number): Promise<string[]>;
  /**
   * Records what came of a credential's renewal, with its audit row and event, in one transaction.
   * A `renewed` outcome is final: false (and nothing written) when one is recorded already.
   */
  recordOutcome(
    credentialId: string,
    schemaId: string,
    expiresAt: Date,
    write: RenewalOutcomeWrite,
  ): Promise<boolean>;
  /**
   * A page of the sealed recipient emails kept, in credential id order after `after` (`keys
   * reseal`, `admin doctor`): rows without one are left out.
   */
  sealedRecipients(after: string | null, limit: number): Promise<SealedRecipient[]>;
  /**
   * Replaces sealed recipient emails, in one transaction, each only while its row still holds
   * `recipientSealed` (a row changed meanwhile is left as it is; `to` equal to it changes none).
   * Each row it matches that is recorded `not_renewable` loses that outcome, so the next sweep
   * takes it again: its email opens under the current key now, and a row that keeps an email is
   * recorded `not_renewable` only because it did not open (`ineligible` and `renewed` stay).
   */
  replaceSealedRecipients(rows: Array<SealedRecipient & { to: string }>): Promise<ReplacedRecipients>;
}

/** What `replaceSealedRecipients` changed: emails sealed anew, `not_renewable` outcomes cleared. */
export interface ReplacedRecipients {
  resealed: number;
  reopened: number;
}

/** One kept sealed recipient email (`recipientSealed`: its text as stored). */
export interface SealedRecipient {
  credentialId: string;
  recipientSealed: string;
}

/** A credential's renewal links (docs/operations.md "Renewal"). */
export interface RenewalLinks {
  renewedFrom: string | null;
  renewedBy: string | null;
}

/** Rows of both directions (`renewed_from` of the credential itself, or `renewed_by`: the one renewing it) merged per credential. */
export function mergeLinks(
  rows: Array<{ id: string; renewed_from: string | null; renewed_by: string | null }>,
): Map<string, RenewalLinks> {
  const links = new Map<string, RenewalLinks>();
  for (const r of rows) {
    const l = links.get(r.id) ?? { renewedFrom: null, renewedBy: null };
    if (r.renewed_from !== null) l.renewedFrom = r.renewed_from;
    if (r.renewed_by !== null) l.renewedBy = r.renewed_by;
    links.set(r.id, l);
  }
  return links;
}
