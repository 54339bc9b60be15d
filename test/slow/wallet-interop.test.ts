import { createHash, sign as cryptoSign, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, globalAgent, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { verifySDJWT } from '@meeco/sd-jwt';
import { digest, generateSalt } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { Resolver } from 'did-resolver';
import { compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getResolver as webDidResolver } from 'web-did-resolver';
import { createApp } from '../../src/app.js';
import { generateDevChain } from '../../src/cli/key-certificates.js';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { x5cToPem } from '../../src/keys/certificates.js';
import { DEV_CA_PEM, issueDevLeaf, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { credoVerifier } from '../helpers/credo.js';
import { startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';

/**
 * Our SD-JWT VCs checked by verifiers nobody here wrote, in each SD_JWT_ISSUER mode:
 * Credo 0.6.3 (did:web and x5c; it supports no other), Meeco's @meeco/sd-jwt (all three, the
 * key found the mode's way) and did-resolver + web-did-resolver (our did:web and the header kid).
 */
type Mode = 'url' | 'did:web' | 'x5c';

const SUBJECT = {
  givenName: 'Dana',
  familyName: 'Okafor',
  memberSince: '2019-05-01',
  tier: 'gold',
  memberNumber: 7,
};

/** membership-v1 with a vct under the origin (so its type metadata is served), SD-JWT only. */
function writeSchemas(dir: string, origin: string): string {
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

interface Running {
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
async function start(mode: Mode): Promise<Running> {
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
  const env: Record<string, string> = { SD_JWT_ISSUER: mode, SCHEMAS_DIR: join(dir, 'schemas') };
  const issuer = await startIssuer({
    dir,
    env: origin ? { ...env, ISSUER_ORIGIN: origin } : env,
    prepare: async (_dir, o) => {
      writeSchemas(dir, o);
      await generateMissingKeys(keysDir);
      if (mode === 'x5c') await generateDevChain(keysDir, { ISSUER_ORIGIN: o, NODE_ENV: 'test' });
    },
  });
  if (https && tls) {
    https.setSecureContext(tls);
    https.on('request', createApp(issuer.ctx));
  }
  const caPem = mode === 'url' ? '' : readFileSync(join(keysDir, DEV_CA_PEM), 'utf8');
  return { issuer, origin: origin ?? issuer.url, caPem, https };
}

async function stop(r: Running) {
  await new Promise<void>((resolve) => (r.https ? r.https.close(() => resolve()) : resolve()));
  r.https?.closeAllConnections();
  await r.issuer.close();
}

/** Hosted issuance with a holder key (cnf), then a presentation with a key-binding JWT. */
async function hostedWithKeyBinding(r: Running, audience: string, nonce: string) {
  const holder = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const holderJwk = holder.publicKey.export({ format: 'jwk' }) as JWK;
  const enc = (await import('../../src/envelope/index.js')).generateHolderKeyPair('x25519');
  const holderDid = `did:example:${nonce}`;
  const res = await r.issuer.post('/issue-vc', {
    holderDID: holderDid,
    pubKey: enc.publicKeyHex,
    userId: 'demo-user-1',
    schemaId: 'membership-v1',
    signingKey: { jwk: holderJwk },
  });
  expect(res.status).toBe(201);
  const stored = [...r.issuer.emulator!.state.envelopes.values()].find(
    (e) => e.envelope.holderDid === holderDid,
  )!;
  expect(stored.envelope.proofType).toBe('SD_JWT_VC');
  const compact = openEnvelope(enc.privateKey, stored.envelope) as string;
  // The holder's side is the reference library's, not ours.
  const holderSdJwt = new SDJwtVcInstance({
    hasher: digest,
    saltGenerator: generateSalt,
    kbSignAlg: 'ES256',
    kbSigner: (data: string) =>
      cryptoSign('sha256', Buffer.from(data), { key: holder.privateKey, dsaEncoding: 'ieee-p1363' }).toString(
        'base64url',
      ),
  });
  const presentation = await holderSdJwt.present(
    compact,
    { givenName: true, tier: true },
    { kb: { payload: { iat: Math.floor(Date.now() / 1000), aud: audience, nonce } } },
  );
  return { compact, presentation };
}

/** Direct issuance by email (POST /admin/issue-vc), opened with the emulated holder's key. */
async function direct(r: Running) {
  const email = `dana.${Date.now()}.${Math.random().toString(36).slice(2)}@example.org`;
  const res = await r.issuer.admin('/admin/issue-vc', {
    userId: email,
    schemaId: 'membership-v1',
    vct: `${r.origin}/vct/membership-v1`,
    expiration: new Date(Date.now() + 86_400_000).toISOString(),
    credentialSubject: SUBJECT,
  });
  expect(res.status).toBe(201);
  const answer = (await res.json()) as { credentialId: string; revocationNonce: string };
  const holder = r.issuer.emulator!.state.holderByEmail(email)!;
  const stored = r.issuer.emulator!.state.envelopes.get(answer.credentialId)!;
  expect(stored.envelope.proofType).toBe('SD_JWT_VC');
  const compact = openEnvelope(privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex), stored.envelope) as string;
  return { compact, nonce: answer.revocationNonce };
}

/** Meeco's verifier, given the issuer key found the mode's way. */
async function meecoVerify(compact: string, findKey: (header: Record<string, unknown>) => Promise<JWK>) {
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

const trustingFetch = async (): Promise<typeof fetch> =>
  (await import('node-fetch')).default as unknown as typeof fetch;

describe.each(['url', 'did:web', 'x5c'] as const)('SD_JWT_ISSUER=%s', (mode) => {
  let r: Running;
  let savedCa: typeof globalAgent.options.ca;
  beforeAll(async () => {
    r = await start(mode);
    savedCa = globalAgent.options.ca;
    if (mode === 'did:web') globalAgent.options.ca = r.caPem;
  });
  afterAll(async () => {
    globalAgent.options.ca = savedCa;
    await stop(r);
  });

  it('Meeco verifies a direct credential with the key found the mode’s way', async () => {
    const { compact } = await direct(r);
    const header = decodeProtectedHeader(compact.split('~')[0]!) as Record<string, any>;
    const payload = await meecoVerify(compact, async (h) => {
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
    });
    expect(payload).toMatchObject({ ...SUBJECT, vct: `${r.origin}/vct/membership-v1` });
    const kid = r.issuer.ctx.keys.current().signing.kid;
    if (mode === 'url') expect(header).toMatchObject({ kid, typ: 'dc+sd-jwt' });
    if (mode === 'x5c') expect(header.x5c).toEqual(r.issuer.ctx.keys.current().signing.x5c);
    expect(payload.iss).toBe(
      mode === 'did:web' ? `did:web:${new URL(r.origin).host.replace(':', '%3A')}` : r.origin,
    );
  });

  it('serves type metadata at the vct, bound by vct#integrity', async () => {
    const { compact } = await direct(r);
    const payload = (await new SDJwtVcInstance({ hasher: digest }).getClaims(compact)) as Record<string, any>;
    const res = await (await trustingFetch())(`${r.origin}/vct/membership-v1`);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(payload['vct#integrity']).toBe(`sha256-${createHash('sha256').update(bytes).digest('base64')}`);
    const meta = JSON.parse(bytes.toString('utf8'));
    expect(meta).toMatchObject({
      vct: `${r.origin}/vct/membership-v1`,
      name: 'Membership',
      display: [{ locale: 'en-GB', name: 'Club membership' }],
      schema: { type: 'object' },
    });
    expect(meta.claims).toContainEqual({
      path: ['tier'],
      display: [{ locale: 'en-GB', label: 'tier' }],
      sd: 'always',
    });
  });

  it('jwt-vc-issuer and did.json serve the signing key in every mode', async () => {
    const f = await trustingFetch();
    const meta = (await (await f(`${r.origin}/.well-known/jwt-vc-issuer`)).json()) as {
      jwks: { keys: JWK[] };
    };
    const did = (await (await f(`${r.origin}/.well-known/did.json`)).json()) as {
      verificationMethod: unknown[];
    };
    const kid = r.issuer.ctx.keys.current().signing.kid;
    expect(meta.jwks.keys.map((k) => k.kid)).toContain(kid);
    expect(did.verificationMethod).toHaveLength(meta.jwks.keys.length);
  });

  if (mode === 'did:web') {
    it('did-resolver + web-did-resolver resolve our did:web and find the header kid', async () => {
      const { compact } = await direct(r);
      const { kid } = decodeProtectedHeader(compact.split('~')[0]!);
      const did = `did:web:${new URL(r.origin).host.replace(':', '%3A')}`;
      expect(kid).toBe(`${did}#${r.issuer.ctx.keys.current().signing.kid}`);
      const resolved = await new Resolver(webDidResolver()).resolve(did);
      expect(resolved.didResolutionMetadata.error).toBeUndefined();
      expect(resolved.didDocument!.id).toBe(did);
      expect(resolved.didDocument!.assertionMethod).toContain(kid);
      expect(resolved.didDocument!.verificationMethod!.map((m) => m.id)).toContain(kid);
    });
  }

  if (mode === 'url') {
    it('Credo refuses the url mode (the reason for the other two)', async () => {
      const { compact } = await direct(r);
      const result = await credoVerifier({ allowInsecureHttpUrls: true }).sdJwtVc.verify({
        compactSdJwtVc: compact,
      });
      expect(result.isValid).toBe(false);
      expect((result as { error: Error }).error.message).toMatch(/Only did and x5c are supported/);
    });
  }

  if (mode === 'x5c') {
    it('Credo refuses our x5c credential when it trusts another CA', async () => {
      const { compact } = await direct(r);
      const stranger = await loadOrCreateDevCa(tempDir());
      const agent = credoVerifier({
        trustedCertificates: [stranger.certificate.toString('pem')],
        allowInsecureHttpUrls: true,
      });
      const result = await agent.sdJwtVc.verify({ compactSdJwtVc: compact });
      expect(result.isValid).toBe(false);
    });
  }

  if (mode !== 'url') {
    it('Credo verifies a hosted credential with key binding and a direct one, then sees it revoked', async () => {
      const agent = credoVerifier({
        trustedCertificates: mode === 'x5c' ? [r.caPem] : undefined,
        fetch: mode === 'did:web' ? await trustingFetch() : fetch,
        allowInsecureHttpUrls: mode === 'x5c',
      });
      const hosted = await hostedWithKeyBinding(r, 'https://verifier.example', 'n-123');
      const kb = await agent.sdJwtVc.verify({
        compactSdJwtVc: hosted.presentation,
        keyBinding: { audience: 'https://verifier.example', nonce: 'n-123' },
        requiredClaimKeys: ['givenName'],
      });
      if (!kb.isValid) throw kb.error;
      expect(kb.sdJwtVc.prettyClaims).toMatchObject({ givenName: 'Alice', tier: 'gold' });

      const { compact, nonce } = await direct(r);
      const before = await agent.sdJwtVc.verify({ compactSdJwtVc: compact, fetchTypeMetadata: true });
      if (!before.isValid) throw before.error;
      expect(before.sdJwtVc.prettyClaims).toMatchObject(SUBJECT);
      // Credo fetches type metadata over https only (the did:web run) and checks vct#integrity.
      if (mode === 'did:web') {
        expect(before.sdJwtVc.typeMetadata).toMatchObject({
          vct: `${r.origin}/vct/membership-v1`,
          name: 'Membership',
        });
      }

      expect((await r.issuer.admin('/admin/revoke', { revocationNonce: nonce })).status).toBe(200);
      const after = await agent.sdJwtVc.verify({ compactSdJwtVc: compact });
      expect(after.isValid).toBe(false);
      expect(String((after as { error: Error }).error.message)).toMatch(/status/i);
    });
  }
});
