import { EventEmitter } from 'node:events';
import type { Logger as PinoLogger } from 'pino';
import { z } from 'zod';

/**
 * The words every room shares: the bottom floor. It imports nothing of ours, so any module may
 * import it without climbing (http → issuance/formats/status → store/envelope → model).
 */

/**
 * Text that a database index holds is bounded in UTF-8 bytes, not characters: a PostgreSQL B-tree
 * entry holds at most 2,704 bytes, and 2,048 CJK characters are 6,144 bytes. The same bound on
 * both engines, checked at the edge (docs/interface.md "Field limits").
 */
export function boundedText(maxBytes: number) {
  return z
    .string()
    .min(1, 'must not be empty')
    .refine((s) => Buffer.byteLength(s, 'utf8') <= maxBytes, `must be at most ${maxBytes} bytes (UTF-8)`);
}

/** The longest user id or holder DID kept in an index (with its schema id, well under a B-tree entry). */
export const MAX_ID_BYTES = 1024;

/**
 * W3C DID Core §3.1 `did = "did:" method-name ":" method-specific-id`: the method lower-case
 * letters and digits, the id made of idchars (`ALPHA / DIGIT / "." / "-" / "_"` and
 * percent-encodings) in `:`-separated segments, the last one non-empty. A DID URL (path, query,
 * fragment) is not a holder DID. The hosting service refuses anything else, so it is refused here
 * before anything is signed or recorded.
 */
const DID_SYNTAX =
  /^did:[a-z0-9]+:(?:(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})*:)*(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})+$/;

export const HolderDidSchema = boundedText(MAX_ID_BYTES).refine(
  (s) => DID_SYNTAX.test(s),
  'must be a DID: did:<method>:<method-specific-id>, the method lower-case letters and digits',
);

/**
 * The proof types, one per credential format, each added by its format's `names.ts`
 * (src/formats/<format>/names.ts) through declaration merging: this floor names none of them, and
 * the formats list (src/formats/names.ts) holds their values for the edges that validate them.
 */
// biome-ignore lint/suspicious/noEmptyInterface: each format's names.ts adds its member.
export interface ProofTypes {}

/** A credential format a schema can be issued in (docs/schemas-and-claims.md): one per format. */
export type ProofType = keyof ProofTypes & string;

/** Token status list values (draft-ietf-oauth-status-list §7.1). */
export type CredentialStatus = 0 | 1 | 2;

/** The name each status value answers under (revocation-status, admin revoke/suspend). */
export const STATUS_NAMES = { 0: 'valid', 1: 'revoked', 2: 'suspended' } as const satisfies Record<
  CredentialStatus,
  string
>;
export type StatusName = (typeof STATUS_NAMES)[CredentialStatus];

/** What an admin may do to a credential's status. */
export type StatusChange = 'revoke' | 'suspend' | 'unsuspend';

/**
 * Hosted (docs/interface.md "issue-vc", the holder asks), direct (admin issue-vc, the issuer sends)
 * or oid4vci (a standards wallet takes an admin's credential offer, docs/interface.md "OpenID4VCI").
 */
export const CHANNELS = ['hosted', 'direct', 'oid4vci'] as const;
export type Channel = (typeof CHANNELS)[number];

/** `none`: nothing to upload (an oid4vci credential goes to the wallet in the credential response). */
/** `failed`: the outbox gave up (a refusal for good, or too many attempts); `uploads retry` resumes it. */
export type UploadState = 'pending' | 'uploaded' | 'failed' | 'none';

/** A credential's place in the token status lists. */
export interface StatusSlot {
  partition: number;
  index: number;
}

/** docs/interface.md encrypted envelope: four standard-base64 fields. */
export interface Envelope {
  /** AES-256-GCM ciphertext of the UTF-8 of `JSON.stringify(value)`. */
  data: string;
  /** 12-byte AES-GCM IV. */
  iv: string;
  /** 16-byte AES-GCM tag. */
  authTag: string;
  /** DER SubjectPublicKeyInfo of the ephemeral ECDH public key. */
  encryptedKey: string;
}

/** Route groups: each has its own key check and rate limit. */
export type RouteGroup = 'holder' | 'admin' | 'public';

/**
 * Where a part writes its operational lines: a pino logger (src/observability/logger.ts builds
 * it with the redaction list). Tests pass a silent or capturing one through `createContext`.
 */
export type Logger = PinoLogger;

/** How an issuance ended, as `issuer_issuances_total` counts it. */
export type IssuanceOutcome = 'issued' | 'existing' | 'failed';

/**
 * What the services report for logs and metrics. The services emit plain facts; the observer in
 * src/observability/ turns them into log lines and Prometheus samples, so no service imports
 * prom-client. Never put a secret, a claim value or an email in an event.
 */
export interface TelemetryEvents {
  issuance: [{ proofType: ProofType; channel: Channel; outcome: IssuanceOutcome }];
  claimsLookup: [
    { schemaId: string; provider: string; outcome: 'eligible' | 'not_eligible' | 'error'; seconds: number },
  ];
  upstreamCall: [
    {
      /** The hosting-service route, e.g. `dstorage/vcs`. */
      call: string;
      outcome: 'ok' | 'failed';
      failure?: string;
      status?: number;
      /** 1-based attempt, when the caller retries. */
      attempt?: number;
    },
  ];
  statusChange: [{ nonce: number; change: StatusChange; actor: string; partition: number | null; at: Date }];
  /** A status list token was built from a snapshot taken at `builtAt`. */
  statusListBuilt: [{ partition: number; seconds: number; builtAt: Date }];
  /** A status list token built at `builtAt` was served to a reader. */
  statusListServed: [{ partition: number; builtAt: Date }];
  rateLimited: [{ group: RouteGroup }];
  /** REDIS_URL's counters could not be reached: a request passed uncounted (fail open). */
  rateLimitFailOpen: [];
}

export class Telemetry extends EventEmitter<TelemetryEvents> {}

export { AUDIT_ACTIONS, type AuditAction } from './audit-actions.js';

/** Who asks for a change: the name of the admin key used, and the reason they gave. */
export interface AuditActor {
  actor: string;
  reason?: string | undefined;
  /** The bulk status change job the change belongs to (docs/operations.md "Bulk status changes"). */
  jobId?: string | undefined;
}
