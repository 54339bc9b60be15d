import { createHash, createPublicKey, verify as verifySignature, X509Certificate } from 'node:crypto';
import type { MdocContext } from '@animo-id/mdoc';
import type { JWK } from 'jose';
import { pooledRandomBytes } from '../../random-pool.js';

/** The library's COSE_Sign1 (not exported by name): what a signing callback is handed. */
export type Sign1 = Parameters<MdocContext['cose']['sign1']['sign']>[0]['sign1'];

const HASHES = { 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' } as const;
const COSE_HASH: Record<string, string> = { ES256: 'sha256', ES384: 'sha384', ES512: 'sha512' };

const unsupported = () => {
  throw new Error('mdoc: device authentication with a MAC is a holder and reader matter, not the issuer');
};

/**
 * The callbacks @animo-id/mdoc runs its cryptography through, over node:crypto. `sign` makes a
 * COSE_Sign1 signature: the issuer passes its key backend's, so a PKCS#11 token signs the MSO.
 */
export function mdocContext(
  sign?: (sign1: Sign1) => Promise<Uint8Array>,
): Pick<MdocContext, 'crypto' | 'cose'> {
  return {
    crypto: {
      random: (length) => new Uint8Array(pooledRandomBytes(length)),
      digest: ({ digestAlgorithm, bytes }) =>
        new Uint8Array(createHash(HASHES[digestAlgorithm]).update(bytes).digest()),
      calculateEphemeralMacKeyJwk: unsupported,
    },
    cose: {
      sign1: {
        sign: ({ sign1 }) => {
          if (!sign) throw new Error('mdoc: this context verifies only');
          return sign(sign1);
        },
        verify: ({ sign1, jwk }) => {
          const { data, signature, alg } = sign1.getRawVerificationData();
          const hash = COSE_HASH[alg];
          if (!hash || !signature) return false;
          const key = createPublicKey({ key: jwk as JWK & { kty: string }, format: 'jwk' });
          return verifySignature(hash, data, { key, dsaEncoding: 'ieee-p1363' }, signature);
        },
      },
      mac0: { sign: unsupported, verify: unsupported },
    },
  };
}

/** The X.509 callbacks a verifier of the library needs, over node:crypto's X509Certificate. */
export const x509Context: MdocContext['x509'] = {
  getIssuerNameField: ({ certificate, field }) => {
    const issuer = new X509Certificate(certificate).issuer;
    return issuer
      .split('\n')
      .filter((line) => line.startsWith(`${field}=`))
      .map((line) => line.slice(field.length + 1));
  },
  getPublicKey: ({ certificate }) =>
    new X509Certificate(certificate).publicKey.export({ format: 'jwk' }) as JWK,
  validateCertificateChain: ({ trustedCertificates, x5chain }) => {
    const chain = x5chain.map((c) => new X509Certificate(c));
    const anchors = trustedCertificates.map((c) => new X509Certificate(c));
    const now = Date.now();
    for (const [i, cert] of chain.entries()) {
      if (now < Date.parse(cert.validFrom) || now > Date.parse(cert.validTo))
        throw new Error(`x5chain[${i}] (${cert.subject}) is outside its validity`);
      const next = chain[i + 1];
      if (next && !(cert.checkIssued(next) && cert.verify(next.publicKey)))
        throw new Error(`x5chain[${i}] is not issued by x5chain[${i + 1}]`);
    }
    const last = chain.at(-1)!;
    const anchor = anchors.find(
      (a) => a.raw.equals(last.raw) || (last.checkIssued(a) && last.verify(a.publicKey)),
    );
    if (!anchor) throw new Error(`x5chain ends at ${last.issuer}, which is not a trusted IACA certificate`);
    if (now < Date.parse(anchor.validFrom) || now > Date.parse(anchor.validTo))
      throw new Error(`the IACA certificate ${anchor.subject} is outside its validity`);
  },
  getCertificateData: ({ certificate }) => {
    const cert = new X509Certificate(certificate);
    return {
      issuerName: cert.issuer.replaceAll('\n', ', '),
      subjectName: cert.subject.replaceAll('\n', ', '),
      serialNumber: cert.serialNumber,
      thumbprint: cert.fingerprint256.replaceAll(':', '').toLowerCase(),
      notBefore: new Date(cert.validFrom),
      notAfter: new Date(cert.validTo),
      pem: cert.toString(),
    };
  },
};
