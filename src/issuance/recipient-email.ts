import { z } from 'zod';

// docs/interface.md "admin issue-vc", initialize-user: "an individual recipient's account email,
// never a partner, service, admin or shared address". Judged on the local part without a `+tag`.
const ROLE_LOCAL_PARTS = new Set([
  'abuse',
  'accounts',
  'admin',
  'administrator',
  'billing',
  'contact',
  'do-not-reply',
  'donotreply',
  'help',
  'helpdesk',
  'hostmaster',
  'info',
  'mailer-daemon',
  'marketing',
  'no-reply',
  'noreply',
  'notifications',
  'office',
  'postmaster',
  'privacy',
  'root',
  'sales',
  'security',
  'service',
  'support',
  'team',
  'webmaster',
]);

export function isRoleAddress(email: string): boolean {
  const local = (email.trim().toLowerCase().split('@')[0] ?? '').split('+')[0] ?? '';
  return ROLE_LOCAL_PARTS.has(local);
}

/** An individual's email: well formed, at most 254 characters, not a role or shared address. */
export const RecipientEmailSchema = z
  .string({ error: 'must be an email address' })
  .trim()
  .min(1, 'required')
  .max(254, 'at most 254 characters')
  .pipe(z.email('not a valid email address'))
  .refine((email) => !isRoleAddress(email), 'a role or shared address, not an individual one');
