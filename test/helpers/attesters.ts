import { createPrivateKey, createPublicKey, type KeyObject, randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Jwk } from '@openid4vc/oauth2';
import { generateEncodedKeyPair } from '../../src/envelope/keys.js';
import { DEV_CA_PEM, issueDevLeaf, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { tempDir } from './tmp.js';

/**
 * A third party that signs attestations with a certificate chain: a test wallet provider (wallet
 * attestations) or a key attester (key attestations). Its CA is generated here with
 * `@peculiar/x509` (the kit's development CA code, in a folder of its own); `trustFile` is the
 * PEM file the issuer is told to trust; attestations carry the leaf alone in `x5c` (HAIP: the
 * trust anchor is left out).
 */
export interface Attester {
  trustFile: string;
  x5c: string[];
  sign(header: Record<string, unknown>, payload: Record<string, unknown>): string;
}

export async function attester(name: string): Promise<Attester> {
  const dir = tempDir();
  const ca = await loadOrCreateDevCa(dir);
  const { spki, pkcs8 } = generateEncodedKeyPair('p256');
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  const chain = await issueDevLeaf(ca, publicKey, `https://${name}.example`);
  const x5c = chain.slice(0, 1);
  return {
    trustFile: join(dir, DEV_CA_PEM),
    x5c,
    sign: (header, payload) => jws({ alg: 'ES256', x5c, ...header }, payload, privateKey),
  };
}

export const trustPem = (a: Attester): string => readFileSync(a.trustFile, 'utf8');

export function jws(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  key: KeyObject,
): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const input = `${b64(header)}.${b64(payload)}`;
  const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

const seconds = (d = new Date()) => Math.floor(d.getTime() / 1000);

/** A wallet attestation (OAuth-Client-Attestation) for the wallet `sub` holding `cnf`. */
export function walletAttestation(
  provider: Attester,
  options: { sub: string; cnf: Jwk; expiresIn?: number; header?: Record<string, unknown> },
): string {
  const iat = seconds();
  return provider.sign(
    { typ: 'oauth-client-attestation+jwt', ...options.header },
    {
      iss: 'https://wallet-provider.example',
      sub: options.sub,
      iat,
      exp: iat + (options.expiresIn ?? 3600),
      cnf: { jwk: options.cnf },
    },
  );
}

/** Its PoP (OAuth-Client-Attestation-PoP), signed by the attested key. */
export function attestationPop(
  key: KeyObject,
  options: { iss: string; aud: string; jti?: string; iat?: number },
): string {
  const iat = options.iat ?? seconds();
  return jws(
    { alg: 'ES256', typ: 'oauth-client-attestation-pop+jwt' },
    { iss: options.iss, aud: options.aud, jti: options.jti ?? randomUUID(), iat, exp: iat + 60 },
    key,
  );
}

/** A key attestation (OpenID4VCI 1.0 Appendix D) of `keys`. */
export function keyAttestation(
  keyAttester: Attester,
  options: { keys: Jwk[]; keyStorage?: string[]; userAuthentication?: string[]; nonce?: string },
): string {
  const iat = seconds();
  return keyAttester.sign(
    { typ: 'key-attestation+jwt' },
    {
      iat,
      exp: iat + 3600,
      attested_keys: options.keys,
      ...(options.keyStorage ? { key_storage: options.keyStorage } : {}),
      ...(options.userAuthentication ? { user_authentication: options.userAuthentication } : {}),
      ...(options.nonce ? { nonce: options.nonce } : {}),
    },
  );
}
