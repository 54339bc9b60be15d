import type { KeyObject } from 'node:crypto';
import type { Config } from '../config/config.js';
import { AppError } from '../errors.js';
import type { SdJwtIssuerMode } from '../issuer-urls.js';
import { chainProblems } from './certificates.js';
import type { KeyRing, ManagedKey } from './key-ring.js';

export type RotationConfig = Pick<Config, 'production' | 'keysDir'>;

/**
 * In `SD_JWT_ISSUER=x5c` mode (docs/security.md "Issuer identification (SD_JWT_ISSUER)") the key
 * that takes over must carry a valid chain before it signs. A key holder (files or database) asks this before any key changes:
 * - a standby key (`npm run admin -- keys prepare`, then `keys certificate`) takes over when its
 *   chain is valid now for this origin; otherwise 409 naming every problem;
 * - without one, development certifies the new key with KEYS_DIR's development CA;
 * - anywhere else there is no CA to ask: 409 saying how to prepare a standby key.
 */
export interface X5cRotation {
  /** Why a standby key may not sign (empty: it may). */
  standbyProblems(key: ManagedKey): string[];
  /** The 409 for a rotation that cannot go ahead. */
  refused(why: string): AppError;
  /**
   * Answers how a newly generated key gets its chain (the development CA), or throws the 409
   * when there is no CA to ask; called before anything changes.
   */
  certifierForNew(): Promise<(publicKey: KeyObject) => Promise<string[]>>;
}

/** The x5c rules of a credential-signing rotation; undefined outside `x5c` mode. */
export function x5cRotation(
  identity: { readonly mode: SdJwtIssuerMode; readonly origin: string },
  config: RotationConfig,
  now = new Date(),
): X5cRotation | undefined {
  if (identity.mode !== 'x5c') return undefined;
  return {
    standbyProblems: (key) =>
      key.x5c
        ? chainProblems(key.x5c, key.publicKey, identity.origin, now)
        : ['no certificate chain; attach one with `npm run admin -- keys certificate`'],
    refused,
    async certifierForNew() {
      // Loaded here: the certificate generator is only needed by x5c development rotations.
      const { hasDevCa, issueDevLeaf, loadOrCreateDevCa } = await import('./dev-ca.js');
      if (config.production || !hasDevCa(config.keysDir)) {
        throw refused(
          'no standby key with a certificate; run `npm run admin -- keys prepare --csr <file>`, have the CSR certified, attach the chain with `npm run admin -- keys certificate <kid> <chain.pem>`, then rotate',
        );
      }
      return async (publicKey) =>
        issueDevLeaf(await loadOrCreateDevCa(config.keysDir, now), publicKey, identity.origin, now);
    },
  };
}

const refused = (why: string) =>
  new AppError('CONFLICT', `SD_JWT_ISSUER=x5c: the next signing key needs a valid certificate chain: ${why}`);

/**
 * Why a credential-signing rotation would be refused now (a rehearsal: `keys compromised
 * --dry-run`), from `ring` freshly read; undefined when it would go ahead. It asks what the key
 * holders ask: a standby key whose chain is valid, else the development CA.
 */
export async function x5cRotationRefusal(
  x5c: X5cRotation | undefined,
  ring: KeyRing,
): Promise<string | undefined> {
  if (!x5c) return undefined;
  const standby = ring.signingKeys.filter((k) => k.standby && !k.retiredAt);
  if (standby.length > 0) {
    const problems: string[] = [];
    for (const key of standby) {
      const found = x5c.standbyProblems(key);
      if (found.length === 0) return undefined;
      problems.push(`standby key ${key.kid}: ${found.join('; ')}`);
    }
    return x5c.refused(problems.join('; ')).message;
  }
  try {
    await x5c.certifierForNew();
    return undefined;
  } catch (err) {
    if (err instanceof AppError) return err.message;
    throw err;
  }
}
