import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPreviewFields, generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';

// Hosted issuance (docs/interface.md "Two flows"), end to end against the mounted emulator, checked as the holder would.
describe('hosted SD-JWT issuance', () => {
  let issuer: TestIssuer;
  const holder = generateHolderKeyPair('x25519');
  const holderDid = 'did:example:holder-alice';

  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
  });

  it('available-vc returns an encrypted preview the holder can open', async () => {
    const res = await issuer.post('/available-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: Array<Record<string, any>> };
    // membership-v1 lists SD_JWT_VC (and BJJ_SIG_2021 once that back-end is on).
    const sd = body.data.find((d) => d.proofType === 'SD_JWT_VC')!;
    expect(sd).toMatchObject({ holderDID: holderDid, schemaId: 'membership-v1', proofType: 'SD_JWT_VC' });
    for (const f of ['encryptedData', 'iv', 'authTag', 'dataEncPublicKey'])
      expect(typeof sd.credentialSubject[f]).toBe('string');
    const preview = openEnvelope(holder.privateKey, fromPreviewFields(sd.credentialSubject));
    expect(preview).toEqual({
      givenName: 'Alice',
      familyName: 'Martin',
      email: 'alice.martin@example.com',
      memberSince: '2021-04-12',
      tier: 'gold',
      memberNumber: 1042,
    });
  });

  it('available-vc filters by schemaId and proofType, and answers [] for a user with no claims', async () => {
    const none = await issuer.post('/available-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId: 'nobody',
    });
    expect(await none.json()).toEqual({ data: [] });
    const other = await issuer.post('/available-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'no-such-schema',
    });
    expect(await other.json()).toEqual({ data: [] });
    const sdOnly = await issuer.post('/available-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      proofType: 'SD_JWT_VC',
    });
    const body = (await sdOnly.json()) as { data: Array<{ proofType: string }> };
    expect(body.data.map((d) => d.proofType)).toEqual(['SD_JWT_VC']);
  });

  it('issue-vc stores an envelope upstream that decrypts to a verifiable SD-JWT VC', async () => {
    const holderJwk = {
      kty: 'EC',
      crv: 'P-256',
      x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
      y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
    };
    const res = await issuer.post('/issue-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
      signingKey: { jwk: holderJwk },
      ignoredField: 'unknown fields are ignored',
    });
    expect(res.status).toBe(201);
    expect(await res.text()).toBe('');

    const stored = [...issuer.emulator!.state.envelopes.values()].filter(
      (e) => e.envelope.holderDid === holderDid,
    );
    expect(stored).toHaveLength(1);
    const envelope = stored[0]!.envelope;
    expect(envelope.schemaId).toBe('membership-v1');
    const compact = openEnvelope(holder.privateKey, envelope) as string;
    expect(typeof compact).toBe('string');

    const verified = await verifySdJwtVc(issuer.url, compact);
    expect(verified.header).toMatchObject({
      typ: 'dc+sd-jwt',
      alg: 'ES256',
      kid: issuer.ctx.keys.current().signing.kid,
    });
    const p = verified.payload as Record<string, any>;
    expect(p.iss).toBe(issuer.url);
    expect(p.sub).toBe(holderDid);
    expect(p.vct).toBe('https://issuer.example/vct/membership-v1');
    expect(p.cnf).toEqual({ jwk: holderJwk });
    expect(p.id).toBe(`urn:uuid:${envelope.externalId}`);
    expect(p.exp - p.iat).toBe(31536000);
    expect(new Date(envelope.expiresAt).getTime()).toBe(p.exp * 1000);
    expect(p.status.status_list.uri).toMatch(new RegExp(`^${issuer.url}/statuslist/\\d+$`));
    // Every top-level claim is selectively disclosable by default.
    const raw = decodeJwt(compact.split('~')[0]!) as Record<string, any>;
    expect(raw._sd).toHaveLength(6);
    expect(raw.givenName).toBeUndefined();
    expect(compact.split('~').filter(Boolean)).toHaveLength(7);
    expect(p).toMatchObject({ givenName: 'Alice', familyName: 'Martin', tier: 'gold', memberNumber: 1042 });

    const record = await issuer.ctx.store.issuances.get(envelope.externalId);
    expect(record).toMatchObject({
      uploadState: 'uploaded',
      holderDid,
      schemaId: 'membership-v1',
      proofType: 'SD_JWT_VC',
    });
    expect(record!.revocationNonce).toBeLessThan(2 ** 53);
  });

  it('a repeated issue-vc for the same holder, schema, claims and keys returns the existing issuance', async () => {
    const body = {
      holderDID: 'did:example:repeat',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-2',
      schemaId: 'membership-v1',
    };
    expect((await issuer.post('/issue-vc', body)).status).toBe(201);
    expect((await issuer.post('/issue-vc', body)).status).toBe(201);
    // The same key as encryptionKey instead of pubKey: still the same issuance (a new key is a new
    // one: repeat-holder-key.test.ts).
    expect(
      (await issuer.post('/issue-vc', { ...body, pubKey: undefined, encryptionKey: holder.publicKeyHex }))
        .status,
    ).toBe(201);
    const stored = [...issuer.emulator!.state.envelopes.values()].filter(
      (e) => e.envelope.holderDid === 'did:example:repeat',
    );
    expect(stored).toHaveLength(1);
  });

  it('encryptionKey wins over pubKey, and P-256 holder keys work', async () => {
    const p256 = generateHolderKeyPair('p256');
    const res = await issuer.post('/issue-vc', {
      holderDID: 'did:example:p256',
      pubKey: holder.publicKeyHex,
      encryptionKey: `0x${p256.publicKeyHex}`,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    expect(res.status).toBe(201);
    const stored = [...issuer.emulator!.state.envelopes.values()].find(
      (e) => e.envelope.holderDid === 'did:example:p256',
    )!;
    expect(typeof openEnvelope(p256.privateKey, stored.envelope)).toBe('string');
    expect(() => openEnvelope(holder.privateKey, stored.envelope)).toThrow();
  });

  it('publishes did:web, jwt-vc-issuer, jwks and partner-info', async () => {
    const did = (await (await fetch(`${issuer.url}/.well-known/did.json`)).json()) as Record<string, any>;
    const host = new URL(issuer.url).host.replace(':', '%3A');
    expect(did.id).toBe(`did:web:${host}`);
    const kid = issuer.ctx.keys.current().signing.kid;
    expect(did.verificationMethod[0]).toMatchObject({
      id: `did:web:${host}#${kid}`,
      type: 'JsonWebKey2020',
      controller: did.id,
    });
    expect(did.verificationMethod[0].publicKeyJwk.d).toBeUndefined();
    expect(did.assertionMethod).toContain(`did:web:${host}#${kid}`);
    expect(did.service[0].serviceEndpoint).toBe(`${issuer.url}/.well-known/svc-partner-info`);

    const meta = (await (await fetch(`${issuer.url}/.well-known/jwt-vc-issuer`)).json()) as Record<
      string,
      any
    >;
    expect(meta.issuer).toBe(issuer.url);
    expect(meta.jwks.keys.map((k: { kid: string }) => k.kid)).toEqual([kid]);

    const jwks = (await (await fetch(`${issuer.url}/.well-known/jwks.json`)).json()) as Record<string, any>;
    expect(jwks.keys[0].kid).toBe(issuer.ctx.keys.current().partner.kid);
    expect(jwks.keys[0].d).toBeUndefined();

    const info = await fetch(`${issuer.url}/.well-known/svc-partner-info`);
    expect(await info.json()).toEqual({ partnerId: issuer.ctx.partnerId });
  });
});
