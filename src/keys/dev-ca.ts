import { type KeyObject, randomBytes, webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { attachChain, originHost, publicOf } from './certificates.js';
import { DEV_CA_FILE, DEV_CA_PEM } from './key-files.js';
import { type LibKey, type LibKeyPair, sanFor, x509 } from './x509.js';

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

interface DevCaFile {
  createdAt: string;
  privateJwk: webcrypto.JsonWebKey;
  certificate: string;
}

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
  if (existsSync(file)) {
    const data = JSON.parse(readFileSync(file, 'utf8')) as DevCaFile;
    const privateKey = await webcrypto.subtle.importKey('jwk', data.privateJwk, EC, false, ['sign']);
    return { file, certificate: new x509.X509Certificate(data.certificate), privateKey, created: false };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const keys = (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: 'CN=issuer-kit development CA',
    notBefore: now,
    notAfter: new Date(now.getTime() + CA_DAYS * DAY_MS),
    keys: keys as unknown as LibKeyPair,
    signingAlgorithm: EC,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as unknown as LibKey),
    ],
  });
  const body: DevCaFile = {
    createdAt: now.toISOString(),
    privateJwk: await webcrypto.subtle.exportKey('jwk', keys.privateKey),
    certificate: certificate.toString('pem'),
  };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  writeFileSync(join(dir, DEV_CA_PEM), `${body.certificate}\n`);
  return { file, certificate, privateKey: keys.privateKey, created: true };
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
    serialNumber: serial(),
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

// RFC 5280 §4.1.2.2: positive, at most 20 octets; a leading 0x01..0x7f byte keeps it positive.
const serial = () => `01${randomBytes(15).toString('hex')}`;

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
