import { createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';

/**
 * X.509 chains for `SD_JWT_ISSUER=x5c` (docs/going-live.md). A chain is the JWK `x5c` member (RFC 7517
 * §4.7): base64 DER, leaf first, each certificate certified by the next. Parsing and checks are
 * node:crypto's X509Certificate; nothing here reads ASN.1 itself.
 */

/** The host a leaf must name: the origin's hostname, without IPv6 brackets. */
export function originHost(origin: string): string {
  return new URL(origin).hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Every reason the chain cannot identify this key (public, or the private key it belongs to) for this origin at `now`, one line each
 * (`x5c[i]: …`); empty when it can: the leaf's public key is the signing key, no certificate is
 * outside its validity, each certificate is issued and signed by the next, and the leaf's
 * subjectAltName names the host (a DNS name, or an IP address for an IP origin).
 */
export function chainProblems(
  x5c: readonly string[],
  publicKey: KeyObject,
  origin: string,
  now: Date,
): string[] {
  if (x5c.length === 0) return ['x5c: empty chain'];
  const certs: X509Certificate[] = [];
  for (const [i, b64] of x5c.entries()) {
    try {
      certs.push(new X509Certificate(Buffer.from(b64, 'base64')));
    } catch {
      return [`x5c[${i}]: not a DER X.509 certificate`];
    }
  }
  const problems: string[] = [];
  const leaf = certs[0]!;
  const spki = (k: KeyObject) => publicOf(k).export({ format: 'der', type: 'spki' });
  if (!spki(leaf.publicKey).equals(spki(publicKey))) {
    problems.push('x5c[0]: the leaf certificate is for a different key than this signing key');
  }
  for (const [i, cert] of certs.entries()) {
    if (now.getTime() < Date.parse(cert.validFrom))
      problems.push(`x5c[${i}]: not valid before ${cert.validFrom}`);
    if (now.getTime() > Date.parse(cert.validTo)) problems.push(`x5c[${i}]: expired on ${cert.validTo}`);
    const next = certs[i + 1];
    if (next && !(cert.checkIssued(next) && cert.verify(next.publicKey))) {
      problems.push(`x5c[${i}]: not issued and signed by x5c[${i + 1}]`);
    }
  }
  const host = originHost(origin);
  const named = isIP(host) ? leaf.checkIP(host) : leaf.checkHost(host, { subject: 'never' });
  if (!named) {
    problems.push(
      `x5c[0]: subjectAltName (${leaf.subjectAltName ?? 'none'}) does not name ${isIP(host) ? 'IP address' : 'DNS name'} ${host}`,
    );
  }
  return problems;
}

/** The public half of a key object, which may already be public. */
export const publicOf = (k: KeyObject): KeyObject => (k.type === 'public' ? k : createPublicKey(k));

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----/g;

/** The certificates of a PEM file, in file order, as `x5c` entries (leaf first by convention). */
export function pemToX5c(pem: string): string[] {
  return [...pem.matchAll(PEM_CERTIFICATE)].map((m) => {
    const der = Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64');
    // Round-trip through the parser so that a damaged block is refused here, not at signing time.
    return Buffer.from(new X509Certificate(der).raw).toString('base64');
  });
}

export function x5cToPem(x5c: readonly string[]): string {
  return x5c.map((b64) => new X509Certificate(Buffer.from(b64, 'base64')).toString()).join('');
}

/** Writes the chain into a key file as its JWK `x5c` member, keeping everything else. */
export function attachChain(file: string, x5c: readonly string[]): void {
  const data = JSON.parse(readFileSync(file, 'utf8')) as {
    privateJwk?: Record<string, unknown>;
    publicJwk?: Record<string, unknown>;
  };
  // A software key keeps its chain on its private JWK; a key held by a token, on its public JWK.
  const jwk = data.privateJwk ?? data.publicJwk;
  if (!jwk) throw new Error(`${file}: neither privateJwk nor publicJwk`);
  jwk.x5c = [...x5c];
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
}

const DAY_MS = 86_400_000;
/** A certificate closer than this to its end wants its successor issued (doctor WARN, console). */
export const CERTIFICATE_WARN_DAYS = 30;

/** How a certificate stands at `now`: whole days left (negative once expired) and the verdict. */
export function certificateStanding(
  notAfter: Date,
  now = Date.now(),
): { days: number; standing: 'valid' | 'expiring' | 'expired' } {
  const days = Math.floor((notAfter.getTime() - now) / DAY_MS);
  return { days, standing: days < 0 ? 'expired' : days < CERTIFICATE_WARN_DAYS ? 'expiring' : 'valid' };
}
