import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { type KeyData, KeyError } from './key-ring.js';

/**
 * Private keys kept in the database are sealed with AES-256-GCM under KEY_ENCRYPTION_KEY (32
 * bytes). The kid and purpose are the additional data, so a sealed key copied onto another row
 * does not open. Format: `v1.<base64url iv>.<base64url tag>.<base64url ciphertext>`.
 */
const VERSION = 'v1';

/** The stored text is not a sealed key this version reads (altered, or another format): no key would open it. */
export class SealedKeyFormatError extends KeyError {
  override name = 'SealedKeyFormatError';
}

const aad = (kid: string, purpose: string) => Buffer.from(`${purpose}:${kid}`);

/** A signing or partner key's content, sealed for its row (`purpose` and `kid` bind it there). */
export function sealKey(kek: Buffer, kid: string, data: KeyData): string {
  return sealJson(kek, kid, data.purpose, data);
}

/**
 * Any key content as JSON, sealed for the row `purpose`/`kid` (the Iden3 BabyJubJub key uses
 * purpose `iden3-bjj` and its public key as the kid).
 */
export function sealJson(kek: Buffer, kid: string, purpose: string, data: unknown): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', kek, iv);
  cipher.setAAD(aad(kid, purpose));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), ciphertext]
    .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
    .join('.');
}

export function openSealedKey(kek: Buffer, kid: string, purpose: string, sealed: string): unknown {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || !ciphertext)
    throw new SealedKeyFormatError(`database:${kid}: sealed: not a ${VERSION} sealed key`);
  try {
    const decipher = createDecipheriv('aes-256-gcm', kek, Buffer.from(iv, 'base64url'));
    decipher.setAAD(aad(kid, purpose));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
    return JSON.parse(plain.toString('utf8'));
  } catch {
    throw new KeyError(
      `database:${kid}: sealed: does not open with this KEY_ENCRYPTION_KEY (another key sealed it: after \`keys reseal\` start with the new KEY_ENCRYPTION_KEY; or the row was altered)`,
    );
  }
}
