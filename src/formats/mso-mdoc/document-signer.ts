import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../errors.js';
import { x5cToPem } from '../../keys/certificates.js';
import type { ManagedKey } from '../../keys/key-ring.js';
import { createDevRoot, type DevRoot, issueUnderDevRoot, readDevRoot, x509 } from '../../keys/x509.js';

/**
 * The certificates an mdoc's issuer signature is checked with (ISO/IEC 18013-5 Annex B): the
 * document signer certificate (the MSO's `x5chain`), certifying the issuer's ES256 signing key,
 * and the IACA root a verifier trusts (`GET /.well-known/mdoc-iaca.pem`).
 *
 * - A signing key with a certificate chain (`npm run admin -- keys prepare --csr`, then
 *   `keys certificate`) signs with it: its leaf is the document signer, its last certificate the
 *   IACA root.
 * - Otherwise, in development, KEYS_DIR's development IACA (`mdoc-iaca.json`, its certificate in
 *   `mdoc-iaca.pem`, created on first use) certifies each signing key as it is first used.
 * - In production without a chain there is no document signer: mdoc issuance answers 503 saying
 *   how to attach one. Certificates are built by @peculiar/x509, as the SD-JWT x5c development CA's.
 */
export const MDOC_IACA_FILE = 'mdoc-iaca.json';
export const MDOC_IACA_PEM = 'mdoc-iaca.pem';

/** ISO/IEC 18013-5 Table B.1: an IACA certificate lives at most 20 years, a document signer 457 days. */
const IACA_DAYS = 3650;
const SIGNER_DAYS = 425;
/** ISO/IEC 18013-5 §7.2.4: the document signer's extended key usage. */
const MDL_DS_EKU = '1.0.18013.5.1.2';
/** The development IACA's country: `XX`, an ISO 3166-1 code reserved for user assignment. */
const DEV_COUNTRY = 'XX';

export interface DocumentSignerCertificates {
  /** The document signer certificate (DER) for the key that signs now. */
  signerFor(key: ManagedKey): Promise<Uint8Array>;
  /** The IACA root (PEM) of the key that signs now; undefined when there is none. */
  iacaPem(key: ManagedKey): string | undefined;
  /** The certificates in use, for `doctor` and the console: subject and expiry. */
  describe(key: ManagedKey): Array<{ role: 'iaca' | 'document-signer'; subject: string; notAfter: Date }>;
}

/** Loads KEYS_DIR's development IACA, creating it (and `mdoc-iaca.pem`) the first time. */
export async function loadOrCreateDevIaca(dir: string, origin: string, now = new Date()): Promise<DevRoot> {
  const file = join(dir, MDOC_IACA_FILE);
  if (existsSync(file)) return readDevRoot(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { certificate, privateKey, body } = await createDevRoot(
    `C=${DEV_COUNTRY}, CN=issuer-kit development IACA (${new URL(origin).host})`,
    IACA_DAYS,
    now,
  );
  try {
    writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another worker created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateDevIaca(dir, origin, now);
    throw err;
  }
  writeFileSync(join(dir, MDOC_IACA_PEM), `${body.certificate}\n`);
  return { certificate, privateKey };
}

/** A document signer certificate for `key`, issued by the development IACA. */
async function issueDevSigner(
  iaca: DevRoot,
  key: ManagedKey,
  origin: string,
  now: Date,
): Promise<Uint8Array> {
  const cert = await issueUnderDevRoot(iaca, key.publicKey, {
    subject: `C=${DEV_COUNTRY}, CN=${new URL(origin).host} document signer ${key.kid.slice(0, 8)}`,
    days: SIGNER_DAYS,
    now,
    extensions: [
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([MDL_DS_EKU], true),
    ],
  });
  return new Uint8Array(cert.rawData);
}

const der = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64'));

/**
 * The document signer of this deployment: a key's own chain, else (`development`) KEYS_DIR's
 * development IACA.
 */
export function documentSignerCertificates(options: {
  keysDir: string;
  origin: string;
  development: boolean;
}): DocumentSignerCertificates {
  const issued = new Map<string, Promise<Uint8Array>>();
  /** The development document signers issued so far, by kid (what `describe` shows of them). */
  const issuedNow = new Map<string, X509Certificate>();
  let iaca: Promise<DevRoot> | undefined;
  const devIaca = () => {
    iaca ??= loadOrCreateDevIaca(options.keysDir, options.origin);
    return iaca;
  };
  const devIacaPem = () => {
    const file = join(options.keysDir, MDOC_IACA_PEM);
    return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  };
  return {
    signerFor(key) {
      if (key.x5c && key.x5c.length > 0) return Promise.resolve(der(key.x5c[0]!));
      if (!options.development)
        return Promise.reject(
          new AppError(
            'UNAVAILABLE',
            `mdoc: signing key ${key.kid} has no certificate chain to be the document signer; run \`npm run admin -- keys prepare --csr <file>\`, have the CSR certified under your IACA root, attach the chain with \`npm run admin -- keys certificate <kid> <chain.pem>\` and rotate`,
          ),
        );
      let cert = issued.get(key.kid);
      if (!cert) {
        cert = devIaca().then(async (ca) => {
          const signer = await issueDevSigner(ca, key, options.origin, new Date());
          issuedNow.set(key.kid, new X509Certificate(signer));
          return signer;
        });
        cert.catch(() => issued.delete(key.kid));
        issued.set(key.kid, cert);
      }
      return cert;
    },
    iacaPem(key) {
      if (key.x5c && key.x5c.length > 0) return x5cToPem([key.x5c.at(-1)!]);
      return options.development ? devIacaPem() : undefined;
    },
    describe(key) {
      const pem = this.iacaPem(key);
      const out: Array<{ role: 'iaca' | 'document-signer'; subject: string; notAfter: Date }> = [];
      if (key.x5c && key.x5c.length > 0) {
        const leaf = new X509Certificate(Buffer.from(key.x5c[0]!, 'base64'));
        out.push({ role: 'document-signer', subject: leaf.subject, notAfter: new Date(leaf.validTo) });
      } else {
        const dev = issuedNow.get(key.kid);
        if (dev) out.push({ role: 'document-signer', subject: dev.subject, notAfter: new Date(dev.validTo) });
      }
      if (pem) {
        const root = new X509Certificate(pem);
        out.push({ role: 'iaca', subject: root.subject, notAfter: new Date(root.validTo) });
      }
      return out;
    },
  };
}
