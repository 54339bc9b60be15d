import { EventEmitter } from 'node:events';
import type { Logger as PinoLogger } from 'pino';
import { z } from 'zod';

/**
 * The words every room shares: the bottom floor. It imports nothing of ours, so any module may
 * import it without climbing (http → issuance/issuers/status → store/envelope → model).
 */

/** A credential format a schema can be issued in (docs/schemas-and-claims.md). */
export const ProofTypeSchema = z.enum(['SD_JWT_VC', 'BJJ_SIG_2021']);
export type ProofType = z.infer<typeof ProofTypeSchema>;

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

/** Hosted (docs/interface.md "issue-vc", the holder asks) or direct (admin issue-vc, the issuer sends). */
export type Channel = 'hosted' | 'direct';

/** `failed`: the outbox gave up (a refusal for good, or too many attempts); `uploads retry` resumes it. */
export type UploadState = 'pending' | 'uploaded' | 'failed';

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

/** Admin actions recorded in the audit log (docs/operations.md; a contract: scripts filter on them). */
export const AUDIT_ACTIONS = [
  'issue',
  'revoke',
  'suspend',
  'unsuspend',
  'claims.import',
  'keys.rotate',
  'status-list.publish',
  'schemas.reload',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Who asks for a change: the name of the admin key used, and the reason they gave. */
export interface AuditActor {
  actor: string;
  reason?: string | undefined;
}
