import type { Response } from 'express';
import { z } from 'zod';
import type { AuditActor } from '../../../model.js';

/** Field rules shared by the admin bodies and queries. */
export const SchemaIdField = z.string().min(1).max(255);
export const VctField = z.string().min(1).max(2048);
/** A date (`2026-01-31`, midnight UTC) or a date-time with its offset, as a Date. */
export const DateBoundField = z
  .union([z.iso.date(), z.iso.datetime({ offset: true })], {
    error: 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time',
  })
  .transform((v) => new Date(v));
/** Why an admin did it, kept in the audit log. */
export const ReasonField = z.string().min(1).max(1000).optional();

/** The audit actor of an admin request: the name of the key `requireAdminKey` accepted. */
export function auditActor(res: Response, reason: string | undefined): AuditActor {
  const actor = res.locals.actor;
  return { actor: typeof actor === 'string' ? actor : 'admin', ...(reason === undefined ? {} : { reason }) };
}
