import 'reflect-metadata';
import { type KeyObject, randomBytes, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';
import { originHost, publicOf } from './certificates.js';
import type { Sign } from './key-backend.js';

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

const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

// RFC 5280 §4.1.2.2: positive, at most 20 octets; a leading 0x01..0x7f byte keeps it positive.
export const certificateSerial = (): string => `01${randomBytes(15).toString('hex')}`;

/**
 * A development root certificate authority (the SD-JWT x5c development CA, the mdoc development
 * IACA): a P-256 key and its self-signed certificate, kept in a JSON file of KEYS_DIR.
 */
export interface DevRoot {
  certificate: x509.X509Certificate;
  privateKey: webcrypto.CryptoKey;
}

/** A development root's file (mode 0600). */
export interface DevRootFile {
  createdAt: string;
  privateJwk: webcrypto.JsonWebKey;
  certificate: string;
}

/** Reads a development root's file. */
export async function readDevRoot(file: string): Promise<DevRoot> {
  const data = JSON.parse(readFileSync(file, 'utf8')) as DevRootFile;
  const privateKey = await webcrypto.subtle.importKey('jwk', data.privateJwk, EC, false, ['sign']);
  return { certificate: new x509.X509Certificate(data.certificate), privateKey };
}

/**
 * A new development root named `name` (an X.500 name), valid `days` from `now`, able to certify
 * leaves only (path length 0), and the file body to keep it in.
 */
export async function createDevRoot(
  name: string,
  days: number,
  now: Date,
): Promise<DevRoot & { body: DevRootFile }> {
  const keys = (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: certificateSerial(),
    name,
    notBefore: now,
    notAfter: new Date(now.getTime() + days * DAY_MS),
    keys: keys as unknown as LibKeyPair,
    signingAlgorithm: EC,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as unknown as LibKey),
    ],
  });
  const body: DevRootFile = {
    createdAt: now.toISOString(),
    privateJwk: await webcrypto.subtle.exportKey('jwk', keys.privateKey),
    certificate: certificate.toString('pem'),
  };
  return { certificate, privateKey: keys.privateKey, body };
}

/**
 * A leaf certificate for `publicKey` (or the public half of a private key) signed by a development
 * root: valid from a minute before `now` for `days`, never past the root, carrying `extensions`
 * and then its subject and authority key identifiers.
 */
export async function issueUnderDevRoot(
  root: DevRoot,
  publicKey: KeyObject,
  options: { subject: string; days: number; now: Date; extensions: x509.Extension[] },
): Promise<x509.X509Certificate> {
  const jwk = publicOf(publicKey).export({ format: 'jwk' }) as webcrypto.JsonWebKey;
  const leafKey = (await webcrypto.subtle.importKey('jwk', jwk, EC, true, ['verify'])) as unknown as LibKey;
  const { now } = options;
  return x509.X509CertificateGenerator.create({
    serialNumber: certificateSerial(),
    subject: options.subject,
    issuer: root.certificate.subject,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(Math.min(now.getTime() + options.days * DAY_MS, root.certificate.notAfter.getTime())),
    publicKey: leafKey,
    signingKey: root.privateKey as unknown as LibKey,
    signingAlgorithm: EC,
    extensions: [
      ...options.extensions,
      await x509.SubjectKeyIdentifierExtension.create(leafKey),
      await x509.AuthorityKeyIdentifierExtension.create(root.certificate),
    ],
  });
}

/**
 * A PKCS#10 request (RFC 2986) for a P-256 key naming the origin's host (CN and subjectAltName),
 * signed by the key's own backend: @peculiar/x509 asks its WebCrypto for the signature, and the
 * WebCrypto it is given here answers `sign` with `sign` (node:crypto, or the PKCS#11 token) and
 * everything else with node:crypto. WebCrypto's ECDSA signature is r||s, which `sign` returns.
 */
export async function certificateRequest(
  key: { publicKey: KeyObject; sign: Sign },
  origin: string,
): Promise<x509.Pkcs10CertificateRequest> {
  const subtle = webcrypto.subtle;
  const signing = {
    getRandomValues: webcrypto.getRandomValues.bind(webcrypto),
    subtle: new Proxy(subtle, {
      get(target, name) {
        if (name === 'sign')
          return async (_alg: unknown, _key: unknown, data: ArrayBuffer | ArrayBufferView) => {
            const bytes = ArrayBuffer.isView(data)
              ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
              : new Uint8Array(data);
            const signature = await key.sign(bytes);
            return signature.buffer.slice(signature.byteOffset, signature.byteOffset + signature.byteLength);
          };
        const value = Reflect.get(target, name) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }),
  };
  const publicKey = await subtle.importKey(
    'jwk',
    key.publicKey.export({ format: 'jwk' }) as webcrypto.JsonWebKey,
    EC,
    true,
    ['verify'],
  );
  // Stands for the private key: only its algorithm is read; `sign` above does the signing.
  const privateKey = { algorithm: EC, type: 'private', extractable: false, usages: ['sign'] };
  return x509.Pkcs10CertificateRequestGenerator.create(
    {
      name: `CN=${originHost(origin)}`,
      keys: { privateKey, publicKey } as unknown as LibKeyPair,
      signingAlgorithm: EC,
      extensions: [sanFor(origin)],
    },
    signing as unknown as LibCrypto,
  );
}
