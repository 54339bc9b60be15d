import { openSealedKey, sealJson } from './sealed-key.js';

/** The `purpose` a sealed recipient email is bound to (src/keys/sealed-key.ts), the credential id its kid. */
export const RECIPIENT_SEAL_PURPOSE = 'recipient-email';

/**
 * Seals and opens a direct credential's recipient email under KEY_ENCRYPTION_KEY, bound to the
 * credential id (docs/security.md "What renewal keeps"): a sealed email copied onto another row
 * does not open.
 */
export function recipientSealing(kek: Buffer) {
  return {
    seal: (credentialId: string, email: string): string =>
      sealJson(kek, credentialId, RECIPIENT_SEAL_PURPOSE, email),
    open: (credentialId: string, sealed: string): string => {
      const email = openSealedKey(kek, credentialId, RECIPIENT_SEAL_PURPOSE, sealed);
      if (typeof email !== 'string') throw new Error('the sealed recipient is not an email');
      return email;
    },
  };
}
export type RecipientSealing = ReturnType<typeof recipientSealing>;
