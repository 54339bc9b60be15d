import { type KeyObject, verify, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { CallbackContext, Jwk } from '@openid4vc/oauth2';
import { trustAnchorsFromPem } from '../verify/issuer-keys.js';
import { verifyJwkJwt } from './library.js';

/**
 * Attestations signed by a third party the operator trusts (a wallet provider, a key attester):
 * the JWS carries an `x5c` chain (RFC 7515 §4.1.6, leaf first, the trust anchor left out or
 * included), each certificate valid now and issued and signed by the next, the last one a trust
 * anchor or issued by one; the leaf's P-256 key signed the JWS with ES256.
 */
export class X5cTrust {
  constructor(
    /** The setting that names the anchors, for messages (`OID4VCI_WALLET_TRUST`). */
    readonly setting: string,
    private readonly anchors: readonly X509Certificate[],
  ) {}

  /** The anchors of a PEM file; a message naming the setting when it holds none. */
  static fromFile(setting: string, file: string): X5cTrust {
    try {
      return new X5cTrust(setting, trustAnchorsFromPem(readFileSync(file, 'utf8')));
    } catch (err) {
      throw new Error(`${setting}: ${file}: ${(err as Error).message}`);
    }
  }

  /** Why the chain is not trusted at `now`; undefined when it is. */
  problem(x5c: unknown, now: Date): string | undefined {
    if (!Array.isArray(x5c) || x5c.length === 0 || !x5c.every((c) => typeof c === 'string'))
      return 'the x5c header is not a list of base64 certificates';
    let certs: X509Certificate[];
    try {
      certs = x5c.map((c) => new X509Certificate(Buffer.from(c, 'base64')));
    } catch {
      return 'the x5c header holds something that is not a DER X.509 certificate';
    }
    const t = now.getTime();
    const current = (c: X509Certificate) => t >= Date.parse(c.validFrom) && t <= Date.parse(c.validTo);
    for (const [i, cert] of certs.entries()) {
      if (!current(cert)) return `x5c[${i}] is not valid now (${cert.validFrom} to ${cert.validTo})`;
      const next = certs[i + 1];
      if (next && !(cert.checkIssued(next) && cert.verify(next.publicKey)))
        return `x5c[${i}] is not issued and signed by x5c[${i + 1}]`;
    }
    const last = certs.at(-1)!;
    const anchored = this.anchors.some(
      (a) =>
        current(a) &&
        (Buffer.from(a.raw).equals(Buffer.from(last.raw)) ||
          (last.checkIssued(a) && last.verify(a.publicKey))),
    );
    if (!anchored)
      return `the x5c chain ends at ${last.issuer.replace(/\n/g, ', ')}, which no certificate of ${this.setting} issued`;
    if (certs.length === 1 && last.checkIssued(last))
      return 'the x5c chain is one self-signed certificate, not a certificate issued by a trust anchor';
    return undefined;
  }

  /**
   * The JWT check the protocol library calls back into for an attestation: an `x5c` signer whose
   * chain is trusted and whose leaf key verifies the ES256 signature. A `jwk` signer (a proof of
   * possession by the attested key) is checked as the channel checks any holder's JWT.
   */
  verifyJwt(now: () => Date): CallbackContext['verifyJwt'] {
    return async (signer, jwt) => {
      if (signer.method === 'jwk') return verifyJwkJwt(signer, jwt);
      if (signer.method !== 'x5c' || signer.alg !== 'ES256') return { verified: false };
      if (this.problem(signer.x5c, now()) !== undefined) return { verified: false };
      const leaf = new X509Certificate(Buffer.from(signer.x5c[0]!, 'base64'));
      const key: KeyObject = leaf.publicKey;
      if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
        return { verified: false };
      const [header, payload, signature] = jwt.compact.split('.');
      const ok = verify(
        'sha256',
        Buffer.from(`${header}.${payload}`),
        { key, dsaEncoding: 'ieee-p1363' },
        Buffer.from(signature ?? '', 'base64url'),
      );
      return ok ? { verified: true, signerJwk: key.export({ format: 'jwk' }) as Jwk } : { verified: false };
    };
  }
}

/** The channel's profile and trust anchors from its settings (src/context.ts). */
export function oid4vciTrust(config: {
  profile: 'basic' | 'haip';
  walletTrust: string | undefined;
  keyAttestationTrust: string | undefined;
}): { profile: 'basic' | 'haip'; walletTrust?: X5cTrust; keyAttestationTrust?: X5cTrust } {
  const { walletTrust, keyAttestationTrust } = config;
  return {
    profile: config.profile,
    ...(walletTrust ? { walletTrust: X5cTrust.fromFile('OID4VCI_WALLET_TRUST', walletTrust) } : {}),
    ...(keyAttestationTrust
      ? { keyAttestationTrust: X5cTrust.fromFile('OID4VCI_KEY_ATTESTATION_TRUST', keyAttestationTrust) }
      : {}),
  };
}
