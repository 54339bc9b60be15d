import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BJJ_KEY_FILE, generateBjjKey, loadOrCreateBjjKey } from '../issuers/iden3/bjj-key.js';
import { generateKey, type KeyPurpose, readKeys } from '../keys/key-ring.js';

const PURPOSES: readonly KeyPurpose[] = ['credential-signing', 'partner-jwt'];

export interface GeneratedKey {
  purpose: KeyPurpose | 'iden3-bjj';
  /** The JWK thumbprint, or the compressed BabyJubJub public key for the Iden3 identity. */
  kid: string;
  file: string;
  created: boolean;
}

/**
 * `npm run keys:generate` and `admin keys generate`: on files, before the first production start.
 * Creates the missing active key of each purpose in KEYS_DIR, and the Iden3 BabyJubJub key, and
 * keeps existing ones (rotation goes through the running server).
 */
export async function generateMissingKeys(dir: string): Promise<GeneratedKey[]> {
  const keys = await readKeys(dir);
  const out: GeneratedKey[] = [];
  for (const purpose of PURPOSES) {
    const active = keys.find((k) => k.purpose === purpose && !k.retiredAt);
    const key = active ?? (await generateKey(dir, purpose));
    out.push({ purpose, kid: key.kid, file: key.file, created: !active });
  }
  const bjjExists = existsSync(join(dir, BJJ_KEY_FILE));
  const bjj = bjjExists
    ? await loadOrCreateBjjKey(dir, { generateIfMissing: false })
    : await generateBjjKey(dir);
  out.push({ purpose: 'iden3-bjj', kid: bjj.publicKeyHex, file: bjj.file, created: !bjjExists });
  return out;
}
