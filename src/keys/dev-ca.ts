import { type KeyObject, webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { attachChain, originHost, publicOf } from './certificates.js';
import { DEV_CA_FILE, DEV_CA_PEM } from './key-files.js';
import { certificateSerial, createDevRoot, type LibKey, readDevRoot, sanFor, x509 } from './x509.js';

/**
 * A development certificate authority for `SD_JWT_ISSUER=x5c` (development only):
 * `KEYS_DIR/dev-ca.json` holds its key and certificate (mode 0600), `KEYS_DIR/dev-ca.pem` the
 * certificate a test wallet or verifier trusts. Certificates are built by @peculiar/x509 over
 * WebCrypto; nothing here encodes ASN.1 itself.
 */

/** The CA's key and certificate, and its certificate alone, both in KEYS_DIR. */
export { DEV_CA_FILE, DEV_CA_PEM };

const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
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
  const jwk = publicOf(publicKey).export({ format: 'jwk' });
  const leafKey = await webcrypto.subtle.importKey('jwk', jwk as webcrypto.JsonWebKey, EC, true, ['verify']);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: certificateSerial(),
    subject: `CN=${originHost(origin)}`,
    issuer: ca.certificate.subject,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(Math.min(now.getTime() + LEAF_DAYS * DAY_MS, ca.certificate.notAfter.getTime())),
    publicKey: leafKey as unknown as LibKey,
    signingKey: ca.privateKey as unknown as LibKey,
    signingAlgorithm: EC,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      sanFor(origin),
      await x509.SubjectKeyIdentifierExtension.create(leafKey as unknown as LibKey),
      await x509.AuthorityKeyIdentifierExtension.create(ca.certificate),
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
