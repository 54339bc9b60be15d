import type { Config } from '../config/config.js';
import { AppError } from '../errors.js';
import { chainProblems } from './certificates.js';
import { type ManagedKey, readKeys } from './key-ring.js';

type RotationConfig = Pick<Config, 'sdJwtIssuer' | 'production' | 'keysDir' | 'issuerOrigin'>;

/**
 * Issue 14: in `SD_JWT_ISSUER=x5c` mode the key that takes over must carry a valid chain before
 * it signs. Checked before any key file changes:
 * - a standby key (`npm run admin -- keys prepare`, then `keys certificate`) takes over when its
 *   chain is valid now for this origin; otherwise 409 naming every problem;
 * - without one, development certifies the new key with KEYS_DIR's development CA;
 * - anywhere else there is no CA to ask: 409 saying how to prepare a standby key.
 * Returns the hook that certifies a newly generated key, when one is needed.
 */
export async function x5cCertifier(
  config: RotationConfig,
  now = new Date(),
): Promise<((created: ManagedKey) => Promise<unknown>) | undefined> {
  if (config.sdJwtIssuer !== 'x5c') return undefined;
  const standby = (await readKeys(config.keysDir)).find(
    (k) => k.purpose === 'credential-signing' && k.standby && !k.retiredAt,
  );
  if (standby) {
    const problems = standby.x5c
      ? chainProblems(standby.x5c, standby.privateKey, config.issuerOrigin, now)
      : ['no certificate chain; attach one with `npm run admin -- keys certificate`'];
    if (problems.length > 0) throw refused(`standby key ${standby.kid}: ${problems.join('; ')}`);
    return undefined;
  }
  // Loaded here: the certificate generator is only needed by x5c development rotations.
  const { certifyWithDevCa, hasDevCa } = await import('./dev-ca.js');
  if (config.production || !hasDevCa(config.keysDir)) {
    throw refused(
      'no standby key with a certificate; run `npm run admin -- keys prepare --csr <file>`, have the CSR certified, attach the chain with `npm run admin -- keys certificate <kid> <chain.pem>`, then rotate',
    );
  }
  return (created) => certifyWithDevCa(config.keysDir, created, config.issuerOrigin, now);
}

const refused = (why: string) =>
  new AppError('CONFLICT', `SD_JWT_ISSUER=x5c: the next signing key needs a valid certificate chain: ${why}`);
