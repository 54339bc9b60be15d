import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';
import { originHost } from './certificates.js';

/**
 * @peculiar/x509 over node:crypto's WebCrypto: certificate and CSR generation only;
 * checks use node:crypto's X509Certificate. The library's DI container needs reflect-metadata.
 */
export { x509 };

// @peculiar/x509 is typed against the DOM's WebCrypto types, which this Node project does not
// load; node:crypto's webcrypto is that same API, so these aliases only bridge the two typings.
type LibCrypto = Parameters<typeof x509.cryptoProvider.set>[0];
export type LibKey = x509.X509CertificateCreateWithKeyParams['signingKey'];
export type LibKeyPair = x509.X509CertificateCreateSelfSignedParams['keys'];
x509.cryptoProvider.set(webcrypto as unknown as LibCrypto);

/**
 * The subjectAltName a leaf for this origin carries: the host (a DNS name, or an IP address) as
 * verifiers expect, and the origin as a URI, since the SD-JWT VC draft lets `iss` match a SAN URI,
 * which is how wallets such as Credo accept an IP-address origin.
 */
export function sanFor(origin: string): x509.SubjectAlternativeNameExtension {
  const host = originHost(origin);
  return new x509.SubjectAlternativeNameExtension([
    { type: isIP(host) ? 'ip' : 'dns', value: host },
    { type: 'url', value: origin },
  ]);
}
