import type { JWK } from 'jose';
import type { CompromisedKeyStore } from '../store/compromised-key-store.js';
import type { IssuanceStore } from '../store/store.js';
import type { KeyRing } from './key-ring.js';

/**
 * docs/interface.md: every credential-signing key a verifier may still meet: the active one, and each
 * retired one until the last credential it signed has expired; never one of `compromised`
 * (docs/operations.md "A signing key is compromised").
 */
export async function publishedSigningKeys(
  ring: KeyRing,
  store: IssuanceStore,
  now = new Date(),
  compromised: ReadonlySet<string> = new Set(),
): Promise<JWK[]> {
  const keys: JWK[] = [];
  for (const key of ring.signingKeys) {
    if (compromised.has(key.kid)) continue;
    if (key.retiredAt) {
      const last = await store.latestExpiryForKid(key.kid);
      if (!last || last.getTime() <= now.getTime()) continue;
    }
    keys.push(key.publicJwk);
  }
  return keys;
}

/** The kids never to publish again, read on every call: another instance may have added one. */
export async function compromisedKids(store: CompromisedKeyStore): Promise<Set<string>> {
  return new Set((await store.list()).map((k) => k.kid));
}
