/**
 * Admin actions recorded in the audit log (docs/operations.md; a contract: scripts filter on them).
 * A file of its own, with no import, so that the admin CLI lists them without loading zod.
 */
export const AUDIT_ACTIONS = [
  'issue',
  'revoke',
  'suspend',
  'unsuspend',
  'claims.import',
  'keys.rotate',
  'status-list.publish',
  'schemas.reload',
  'uploads.retry',
  'webhooks.add',
  'webhooks.remove',
  'webhooks.rotate-secret',
  'webhooks.retry',
  'status-change.job',
  'keys.compromised',
  'renew',
  'renewal.skipped',
  'console.session-end',
  'oid4vci.claims',
  'oid4vci.notification',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
