import type { JWK } from 'jose';
import type { IssuanceStore } from '../store/store.js';
import type { KeyRing } from './key-ring.js';

/**
 * docs/interface.md: every credential-signing key a verifier may still meet: the active one, and each
 * retired one until the last credential it signed has expired.
 */
export async function publishedSigningKeys(
  ring: KeyRing,
  store: IssuanceStore,
  now = new Date(),
): Promise<JWK[]> {
  const keys: JWK[] = [];
  for (const key of ring.signingKeys) {
    if (key.retiredAt) {
      const last = await store.latestExpiryForKid(key.kid);
      if (!last || last.getTime() <= now.getTime()) continue;
    }
    keys.push(key.publicJwk);
  }
  return keys;
}
