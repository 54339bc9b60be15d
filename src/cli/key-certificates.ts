import { createPublicKey, webcrypto } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../config/config.js';
import { attachChain, chainProblems, originHost, pemToX5c } from '../keys/certificates.js';
import { certifyWithDevCa, DEV_CA_PEM } from '../keys/dev-ca.js';
import { generateKey, KeyError, loadKeyRing, readKeys } from '../keys/key-ring.js';
import { type LibKeyPair, sanFor, x509 } from '../keys/x509.js';

/**
 * SD_JWT_ISSUER=x5c key files (issue 14): standby keys with a certificate request, chains attached
 * to key files, and development chains. Key files only; the server is not involved.
 */

export interface PreparedKey {
  kid: string;
  file: string;
  csr: string | undefined;
}

const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/**
 * `npm run admin -- keys prepare [--csr <file>]` (issue 14): a standby credential-signing key for
 * the next rotation, published at once but not signing. With `--csr`, a PKCS#10 request for the
 * origin's host, to be certified and attached with `keys certificate` before rotating in x5c mode.
 */
export async function prepareKey(keysDir: string, origin: string, csrFile?: string): Promise<PreparedKey> {
  const key = await generateKey(keysDir, 'credential-signing', new Date(), { standby: true });
  if (csrFile === undefined) return { kid: key.kid, file: key.file, csr: undefined };
  const privateJwk = key.privateKey.export({ format: 'jwk' }) as webcrypto.JsonWebKey;
  const publicJwk = createPublicKey(key.privateKey).export({ format: 'jwk' }) as webcrypto.JsonWebKey;
  const keys = {
    privateKey: await webcrypto.subtle.importKey('jwk', privateJwk, EC, false, ['sign']),
    publicKey: await webcrypto.subtle.importKey('jwk', publicJwk, EC, true, ['verify']),
  };
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=${originHost(origin)}`,
    keys: keys as unknown as LibKeyPair,
    signingAlgorithm: EC,
    extensions: [sanFor(origin)],
  });
  writeFileSync(csrFile, `${csr.toString('pem')}\n`);
  return { kid: key.kid, file: key.file, csr: csrFile };
}

export interface AttachedCertificate {
  kid: string;
  file: string;
  certificates: number;
}

/**
 * `npm run admin -- keys certificate <kid> <chain.pem>` (issue 14): checks the PEM chain (leaf
 * first) against the credential-signing key `kid` and ISSUER_ORIGIN's host, then writes it into
 * the key file as its JWK `x5c`. A chain for another key, an expired one or one whose leaf does
 * not name the host is refused, with every reason.
 */
export async function attachCertificate(
  keysDir: string,
  kid: string,
  pemFile: string,
  origin: string,
  now = new Date(),
): Promise<AttachedCertificate> {
  const key = (await readKeys(keysDir)).find((k) => k.kid === kid && k.purpose === 'credential-signing');
  if (!key) throw new KeyError(`${keysDir}: no credential-signing key with kid ${kid}`);
  let x5c: string[];
  try {
    x5c = pemToX5c(readFileSync(pemFile, 'utf8'));
  } catch (err) {
    throw new KeyError(`${pemFile}: not a PEM certificate chain (${(err as Error).message})`);
  }
  if (x5c.length === 0) throw new KeyError(`${pemFile}: no -----BEGIN CERTIFICATE----- block`);
  const problems = chainProblems(x5c, key.privateKey, origin, now);
  if (problems.length > 0) throw new KeyError(`${pemFile}: refused for ${kid}:\n  ${problems.join('\n  ')}`);
  attachChain(key.file, x5c);
  return { kid, file: key.file, certificates: x5c.length };
}

/**
 * `npm run keys:generate -- --x5c` (development only, issue 14): the active credential-signing
 * key gets a leaf from KEYS_DIR's development CA naming ISSUER_ORIGIN's host, unless its chain
 * is already valid for that host.
 */
export async function generateDevChain(
  keysDir: string,
  env: NodeJS.ProcessEnv,
  now = new Date(),
): Promise<{ kid: string; host: string; caPem: string; created: boolean }> {
  if (env.NODE_ENV === 'production') {
    throw new KeyError(
      '--x5c makes a development CA; in production attach a real chain with `npm run admin -- keys certificate`',
    );
  }
  // The same ISSUER_ORIGIN (and default) the server will use.
  const origin = loadConfig({ ...env, KEYS_DIR: keysDir }).config.issuerOrigin;
  const ring = await loadKeyRing(keysDir, { generateIfMissing: false });
  const key = ring.signing;
  const valid = key.x5c !== undefined && chainProblems(key.x5c, key.privateKey, origin, now).length === 0;
  if (!valid) await certifyWithDevCa(keysDir, key, origin, now);
  return { kid: key.kid, host: originHost(origin), caPem: join(keysDir, DEV_CA_PEM), created: !valid };
}
