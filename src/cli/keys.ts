import { generateKey, type KeyPurpose, readKeys } from '../keys/key-ring.js';

const PURPOSES: readonly KeyPurpose[] = ['credential-signing', 'partner-jwt'];

/**
 * `admin keys generate`: on files, like `npm run keys:generate`: creates the missing active key of
 * each purpose in KEYS_DIR and keeps existing ones (rotation goes through the running server).
 */
export async function generateMissingKeys(
  dir: string,
): Promise<Array<{ purpose: KeyPurpose; kid: string; file: string; created: boolean }>> {
  const keys = await readKeys(dir);
  const out: Array<{ purpose: KeyPurpose; kid: string; file: string; created: boolean }> = [];
  for (const purpose of PURPOSES) {
    const active = keys.find((k) => k.purpose === purpose && !k.retiredAt);
    const key = active ?? (await generateKey(dir, purpose));
    out.push({ purpose, kid: key.kid, file: key.file, created: !active });
  }
  return out;
}
