import type { Response } from 'express';
import { z } from 'zod';
import type { AuditActor } from '../../../model.js';

/** Field rules shared by the admin bodies and queries. */
export const SchemaIdField = z.string().min(1).max(255);
export const VctField = z.string().min(1).max(2048);
/** A batch id as recorded with its credentials (an OpenID4VCI batch's, a batch-issue run's). */
export const BatchSelectorField = z.string().min(1).max(255);
/** A date (`2026-01-31`, midnight UTC) or a date-time with its offset, as a Date. */
export const DateBoundField = z
  .union([z.iso.date(), z.iso.datetime({ offset: true })], {
    error: 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time',
  })
  .transform((v) => new Date(v));
/** Why an admin did it, kept in the audit log. */
export const ReasonField = z.string().min(1).max(1000).optional();
/** Why an admin did it, where the route requires a reason (kept in the audit log). */
export const RequiredReasonField = z
  .string({ error: 'required: say why (kept in the audit log)' })
  .trim()
  .min(1, 'must not be empty')
  .max(1000);
/**
 * An email a read or a selector filters by: any well-formed address (a role address may have been
 * issued to before the recipient rule), hashed by the route, never stored or logged as given.
 */
export const EmailFilterField = z
  .string({ error: 'must be an email address' })
  .trim()
  .max(254, 'at most 254 characters')
  .pipe(z.email('not a valid email address'));

/** The audit actor of an admin request: the name of the key `requireAdminKey` accepted. */
export function auditActor(res: Response, reason: string | undefined): AuditActor {
  const actor = res.locals.actor;
  return { actor: typeof actor === 'string' ? actor : 'admin', ...(reason === undefined ? {} : { reason }) };
}
