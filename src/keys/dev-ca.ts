import type { KeyObject, webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { attachChain, originHost } from './certificates.js';
import { DEV_CA_FILE, DEV_CA_PEM } from './key-files.js';
import { createDevRoot, issueUnderDevRoot, readDevRoot, sanFor, x509 } from './x509.js';

/**
 * A development certificate authority for `SD_JWT_ISSUER=x5c` (development only):
 * `KEYS_DIR/dev-ca.json` holds its key and certificate (mode 0600), `KEYS_DIR/dev-ca.pem` the
 * certificate a test wallet or verifier trusts. Certificates are built by @peculiar/x509 over
 * WebCrypto; nothing here encodes ASN.1 itself.
 */

/** The CA's key and certificate, and its certificate alone, both in KEYS_DIR. */
export { DEV_CA_FILE, DEV_CA_PEM };

const CA_DAYS = 3650;
const LEAF_DAYS = 825;

export interface DevCa {
  file: string;
  certificate: x509.X509Certificate;
  privateKey: webcrypto.CryptoKey;
  created: boolean;
}

export function hasDevCa(dir: string): boolean {
  return existsSync(join(dir, DEV_CA_FILE));
}

/** Loads the development CA of KEYS_DIR, creating it (and dev-ca.pem) the first time. */
export async function loadOrCreateDevCa(dir: string, now = new Date()): Promise<DevCa> {
  const file = join(dir, DEV_CA_FILE);
  if (existsSync(file)) return { file, ...(await readDevRoot(file)), created: false };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { certificate, privateKey, body } = await createDevRoot('CN=issuer-kit development CA', CA_DAYS, now);
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  writeFileSync(join(dir, DEV_CA_PEM), `${body.certificate}\n`);
  return { file, certificate, privateKey, created: true };
}

/**
 * A leaf certificate for `publicKey` (or the public half of a private key) naming the origin's host in its subjectAltName (an IP
 * address entry for an IP host, a DNS name otherwise), signed by the development CA.
 * Returns the `x5c` chain: leaf, then the CA.
 */
export async function issueDevLeaf(
  ca: DevCa,
  publicKey: KeyObject,
  origin: string,
  now = new Date(),
): Promise<string[]> {
  const leaf = await issueUnderDevRoot(ca, publicKey, {
    subject: `CN=${originHost(origin)}`,
    days: LEAF_DAYS,
    now,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      sanFor(origin),
    ],
  });
  return [leaf, ca.certificate].map((c) => Buffer.from(c.rawData).toString('base64'));
}

/** Development: gives `key` a leaf from KEYS_DIR's development CA (created if missing). */
export async function certifyWithDevCa(
  dir: string,
  key: { file: string; publicKey: KeyObject },
  origin: string,
  now = new Date(),
): Promise<string[]> {
  const ca = await loadOrCreateDevCa(dir, now);
  const x5c = await issueDevLeaf(ca, key.publicKey, origin, now);
  attachChain(key.file, x5c);
  return x5c;
}
