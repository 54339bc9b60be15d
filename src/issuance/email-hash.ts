import { createHmac, randomBytes } from 'node:crypto';
import type { MetaStore } from '../store/store.js';

/** The `meta` row holding the HMAC key of email hashes: 32 random bytes, base64url, made on first use. */
export const EMAIL_HASH_SALT_KEY = 'email_hash_salt';

/** What two spellings of one address have in common: lowercase, no surrounding whitespace. */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Hashes an email for the issuances table and the history filter (the same key for both). */
export type EmailHasher = (email: string) => Promise<string>;

/**
 * `history --email`: HMAC-SHA256 of the normalised address under a random key kept in the
 * database's `meta` table (docs/security.md "Finding issuances by email"). The key is read once per process;
 * `setIfAbsent` makes instances that start together on one database agree on it.
 */
export function emailHasher(meta: MetaStore): EmailHasher {
  let key: Promise<Buffer> | undefined;
  const loadKey = async () =>
    Buffer.from(
      (await meta.get(EMAIL_HASH_SALT_KEY)) ??
        (await meta.setIfAbsent(EMAIL_HASH_SALT_KEY, randomBytes(32).toString('base64url'))),
      'base64url',
    );
  return async (email) => {
    key ??= loadKey().catch((err: unknown) => {
      key = undefined; // a failed read is retried by the next call, not remembered
      throw err;
    });
    return createHmac('sha256', await key)
      .update(normaliseEmail(email), 'utf8')
      .digest('base64url');
  };
}
