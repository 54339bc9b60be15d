import { createHash } from 'node:crypto';

/** KEY_ENCRYPTION_KEY: 64 hex digits or base64 of 32 bytes. A string result is the problem. */
export function parseKeyEncryptionKey(value: string): Buffer | string {
  const bytes = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (bytes.length !== 32) return 'must be 32 bytes, as 64 hex digits or base64 (openssl rand -hex 32)';
  return bytes;
}

/**
 * Development only: the key used when KEY_ENCRYPTION_KEY is unset outside production. Anyone can
 * derive it, so it protects nothing; production refuses to start without a real one.
 */
export const DEVELOPMENT_KEY_ENCRYPTION_KEY = createHash('sha256')
  .update('issuer-kit development KEY_ENCRYPTION_KEY')
  .digest();

/** The keys that seal private keys kept in the database, resolved once from the environment. */
export interface KeyEncryption {
  /** What the server seals and opens with: KEY_ENCRYPTION_KEY, or the development key when unset. */
  current: Buffer;
  /** KEY_ENCRYPTION_KEY was set (false: `current` is the development key). */
  given: boolean;
  /**
   * KEY_ENCRYPTION_KEY_PREVIOUS, the key a `keys reseal` replaces: the key, or what is wrong with
   * it. The server never opens with it; `admin doctor` tries it to tell a reseal still to run.
   */
  previous: Buffer | string | undefined;
}

export function resolveKeyEncryption(
  current: Buffer | undefined,
  previousValue: string | undefined,
): KeyEncryption {
  return {
    current: current ?? DEVELOPMENT_KEY_ENCRYPTION_KEY,
    given: current !== undefined,
    previous: previousValue === undefined ? undefined : parseKeyEncryptionKey(previousValue),
  };
}

/**
 * Why a KEY_ENCRYPTION_KEY protects nothing, or undefined. The development key is derived from a
 * public string, and a key of a few distinct bytes (all zeros, one byte repeated, `abab…`) is not
 * random: with either, a copy of the database alone opens every sealed private key. A random
 * 32-byte key has fewer than 8 distinct bytes with negligible probability (docs/security.md
 * "Keys shared by several instances").
 */
export function weakKeyEncryptionKey(key: Buffer): string | undefined {
  if (key.equals(DEVELOPMENT_KEY_ENCRYPTION_KEY))
    return 'is the public development key, which anyone can derive';
  if (new Set(key).size < 8) return `is not random (${new Set(key).size} distinct byte values in 32)`;
  return undefined;
}
