import { createHash, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { verifySDJWT } from '@meeco/sd-jwt';
import { Resolver } from 'did-resolver';
import { compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import { expect } from 'vitest';
import { getResolver as webDidResolver } from 'web-did-resolver';
import { createApp } from '../../src/app.js';
import { generateDevChain } from '../../src/cli/key-certificates.js';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { x5cToPem } from '../../src/keys/certificates.js';
import { DEV_CA_PEM, issueDevLeaf, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { startIssuer, type TestIssuer, tempDir } from './issuer.js';

/**
 * A test issuer in each SD_JWT_ISSUER mode, as wallets and verifiers nobody here wrote find its
 * key: `url` (jwt-vc-issuer), `did:web` (served over TLS on loopback, since did:web resolvers
 * fetch https only) and `x5c` (a chain from the development CA).
 */
export type Mode = 'url' | 'did:web' | 'x5c';

/** membership-v1 with a vct under the origin (so its type metadata is served), SD-JWT only. */
export function writeSchemas(dir: string, origin: string): string {
  const schemas = join(dir, 'schemas');
  const schema = JSON.parse(readFileSync('schemas/membership-v1.json', 'utf8'));
  schema.proofTypes = ['SD_JWT_VC'];
  delete schema.iden3;
  schema.sdJwt = {
    vct: `${origin}/vct/membership-v1`,
    display: [
      {
        locale: 'en-GB',
        name: 'Club membership',
        rendering: { simple: { background_color: '#12355B', text_color: '#FFFFFF' } },
      },
    ],
  };
  mkdirSync(schemas, { recursive: true });
  writeFileSync(join(schemas, 'membership-v1.json'), JSON.stringify(schema));
  return schemas;
}

export interface Running {
  issuer: TestIssuer;
  /** The ISSUER_ORIGIN (https for did:web, so that web-did-resolver fetches it unmodified). */
  origin: string;
  caPem: string;
  https?: Server;
}

/**
 * did:web: web-did-resolver (and Credo's resolver, which is web-did-resolver) always fetch
 * https://<host>/.well-known/did.json. Rather than patch it, the issuer is also served over TLS
 * on loopback with a certificate from our development CA, and node's https agent (what
 * cross-fetch uses in Node) trusts that CA. ISSUER_ORIGIN is that https origin.
 */
export async function start(
  mode: Mode,
  extraEnv: Record<string, string> = {},
  /** Given the issuer's origin before it starts; the settings it answers are added to its env. */
  prepare?: (origin: string) => Promise<Record<string, string>>,
): Promise<Running> {
  const dir = tempDir();
  const keysDir = join(dir, 'keys');
  let https: Server | undefined;
  let origin: string | undefined;
  let tls: { key: string; cert: string } | undefined;
  if (mode === 'did:web') {
    https = createHttpsServer();
    await new Promise<void>((resolve) => https!.listen(0, '127.0.0.1', resolve));
    origin = `https://127.0.0.1:${(https.address() as AddressInfo).port}`;
    const ca = await loadOrCreateDevCa(keysDir);
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const chain = await issueDevLeaf(ca, privateKey, origin);
    tls = { key: privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, cert: x5cToPem(chain) };
  }
  const env: Record<string, string> = { SD_JWT_ISSUER: mode, SCHEMAS_DIR: join(dir, 'schemas'), ...extraEnv };
  const issuerEnv = origin ? { ...env, ISSUER_ORIGIN: origin } : env;
  const issuer = await startIssuer({
    dir,
    env: issuerEnv,
    prepare: async (_dir, o) => {
      writeSchemas(dir, o);
      await generateMissingKeys(keysDir);
      if (mode === 'x5c') await generateDevChain(keysDir, { ISSUER_ORIGIN: o, NODE_ENV: 'test' });
      if (prepare) Object.assign(issuerEnv, await prepare(o));
    },
  });
  if (https && tls) {
    https.setSecureContext(tls);
    https.on('request', createApp(issuer.ctx));
  }
  const caPem = mode === 'url' ? '' : readFileSync(join(keysDir, DEV_CA_PEM), 'utf8');
  return { issuer, origin: origin ?? issuer.url, caPem, https };
}

export async function stop(r: Running) {
  await new Promise<void>((resolve) => (r.https ? r.https.close(() => resolve()) : resolve()));
  r.https?.closeAllConnections();
  await r.issuer.close();
}
/** Meeco's verifier, given the issuer key found the mode's way. */
export async function meecoVerify(
  compact: string,
  findKey: (header: Record<string, unknown>) => Promise<JWK>,
) {
  const header = decodeProtectedHeader(compact.split('~')[0]!) as Record<string, unknown>;
  const jwk = await findKey(header);
  const key = await importJWK(jwk, 'ES256');
  return verifySDJWT(
    compact,
    async (jwt: string) => {
      await compactVerify(jwt, key);
      return true;
    },
    async (alg: string) => {
      expect(alg).toBe('sha-256');
      return (data: string) => createHash('sha256').update(data).digest('base64url');
    },
  );
}

export const trustingFetch = async (): Promise<typeof fetch> =>
  (await import('node-fetch')).default as unknown as typeof fetch;

/** The issuer key of a credential header, found as a verifier of `mode` finds it. */
export async function issuerKeyOf(r: Running, mode: Mode, h: Record<string, unknown>): Promise<JWK> {
  if (mode === 'url') {
    const meta = (await (await fetch(`${r.origin}/.well-known/jwt-vc-issuer`)).json()) as {
      issuer: string;
      jwks: { keys: JWK[] };
    };
    expect(meta.issuer).toBe(r.origin);
    return meta.jwks.keys.find((k) => k.kid === h.kid)!;
  }
  if (mode === 'did:web') {
    const resolved = await new Resolver(webDidResolver()).resolve(String(h.kid).split('#')[0]!);
    const vm = resolved.didDocument!.verificationMethod!.find((m) => m.id === h.kid)!;
    return vm.publicKeyJwk as JWK;
  }
  // x5c: the chain must lead to the development CA; the key is the leaf's.
  const chain = (h.x5c as string[]).map((c) => new X509Certificate(Buffer.from(c, 'base64')));
  const ca = new X509Certificate(r.caPem);
  expect(chain.at(-1)!.verify(ca.publicKey)).toBe(true);
  for (let i = 0; i + 1 < chain.length; i++) expect(chain[i]!.verify(chain[i + 1]!.publicKey)).toBe(true);
  expect(chain[0]!.checkIP('127.0.0.1')).toBe('127.0.0.1');
  return chain[0]!.publicKey.export({ format: 'jwk' }) as JWK;
}
