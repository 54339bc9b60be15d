import { createHash, sign as cryptoSign, generateKeyPairSync } from 'node:crypto';
import { globalAgent } from 'node:https';
import { digest, generateSalt } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { Resolver } from 'did-resolver';
import { decodeProtectedHeader, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getResolver as webDidResolver } from 'web-did-resolver';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { credoVerifier } from '../helpers/credo.js';
import { tempDir } from '../helpers/issuer.js';
import {
  issuerKeyOf,
  meecoVerify,
  type Running,
  start,
  stop,
  trustingFetch,
} from '../helpers/issuer-modes.js';

/**
 * Our SD-JWT VCs checked by verifiers nobody here wrote, in each SD_JWT_ISSUER mode:
 * Credo 0.6.3 (did:web and x5c; it supports no other), Meeco's @meeco/sd-jwt (all three, the
 * key found the mode's way) and did-resolver + web-did-resolver (our did:web and the header kid).
 */

const SUBJECT = {
  givenName: 'Dana',
  familyName: 'Okafor',
  memberSince: '2019-05-01',
  tier: 'gold',
  memberNumber: 7,
};

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
    const payload = await meecoVerify(compact, (h) => issuerKeyOf(r, mode, h));
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
