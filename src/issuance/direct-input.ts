import { z } from 'zod';
import { RESERVED_CLAIMS } from '../schemas/schema-file.js';

// docs/interface.md "admin issue-vc" inputs, shared by the route and the admin CLI (which checks rows before sending).

/** `allow` issues another credential, `ignore` answers the holder's valid one, `revoke` replaces it. */
export const OnDuplicateSchema = z.enum(['allow', 'ignore', 'revoke'], {
  error: 'must be one of allow, ignore, revoke',
});
export type OnDuplicate = z.infer<typeof OnDuplicateSchema>;

/** ISO 8601 date-time with an offset (or a date, meaning 00:00 UTC); must be in the future. */
export const ExpirationSchema = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()], {
    error: 'must be an ISO 8601 date-time with an offset (or a date)',
  })
  .transform((s) => new Date(s.length === 10 ? `${s}T00:00:00Z` : s))
  .refine((d) => d.getTime() > Date.now(), 'must be in the future');

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Subject claims; each reserved claim is its own issue, so a 400 names every one. */
export const CredentialSubjectSchema = z
  .record(z.string(), z.unknown(), { error: 'must be an object' })
  .superRefine((subject, ctx) => {
    for (const claim of RESERVED_CLAIMS) {
      if (Object.hasOwn(subject, claim))
        ctx.addIssue({ code: 'custom', path: [claim], message: 'reserved claim name, set by the issuer' });
    }
  });

export const DisclosureFrameSchema = z.record(z.string(), z.unknown(), { error: 'must be an object' });

export interface InputProblem {
  field: string;
  message: string;
}

/**
 * An SD-JWT disclosure frame checked against the subject it applies to: `_sd` lists claims that
 * exist at that level (indexes for arrays), `_sd_decoy` is a small count, and any other key names
 * an object or array claim with a nested frame.
 */
export function disclosureFrameProblems(
  frame: unknown,
  subject: unknown,
  path = 'disclosureFrame',
): InputProblem[] {
  if (!isObject(frame)) return [{ field: path, message: 'must be an object' }];
  const problems: InputProblem[] = [];
  const has = (name: unknown): boolean =>
    Array.isArray(subject)
      ? Number.isInteger(name) && (name as number) >= 0 && (name as number) < subject.length
      : typeof name === 'string' && isObject(subject) && Object.hasOwn(subject, name);
  for (const [key, value] of Object.entries(frame)) {
    const at = `${path}.${key}`;
    if (key === '_sd') {
      if (!Array.isArray(value)) {
        problems.push({ field: at, message: 'must be an array of claim names' });
        continue;
      }
      value.forEach((name, i) => {
        if (!has(name))
          problems.push({ field: `${at}.${i}`, message: `${String(name)} is not a claim here` });
      });
    } else if (key === '_sd_decoy') {
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 100)
        problems.push({ field: at, message: 'must be an integer from 0 to 100' });
    } else {
      const child = Array.isArray(subject)
        ? /^\d+$/.test(key)
          ? subject[Number(key)]
          : undefined
        : isObject(subject)
          ? subject[key]
          : undefined;
      if (typeof child !== 'object' || child === null)
        problems.push({ field: at, message: 'names no object or array claim' });
      else problems.push(...disclosureFrameProblems(value, child, at));
    }
  }
  return problems;
}
