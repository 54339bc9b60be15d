import {
  CredentialStatusResolverRegistry,
  CredentialStatusType,
  IssuerResolver,
  ProofType,
  W3CCredential,
} from '@0xpolygonid/js-sdk';
import { Hash, verifyProof } from '@iden3/js-merkletree';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPreviewFields, generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import { didResolverFor } from '../helpers/did-resolver.js';
import { queryStore, removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { HOLDER_DID_KEY, holderIden3Did } from '../unit/formats/iden3-bjj/fixtures.js';

type Json = Record<string, any>;

// BJJ_SIG_2021 through the same routes, outbox and status routes as SD-JWT, verified by
// js-sdk against the running server's /credential-status (loopback only).
describe('hosted BJJ_SIG_2021 issuance', () => {
  let issuer: TestIssuer;
  let resolver: Awaited<ReturnType<typeof didResolverFor>>;
  const dir = tempDir();
  const holder = generateHolderKeyPair();

  beforeAll(async () => {
    issuer = await startIssuer({ dir });
    resolver = await didResolverFor(issuer);
  });
  afterAll(async () => {
    await issuer.close();
    await resolver.close();
    removeDir(dir);
  });

  const registry = () => {
    const r = new CredentialStatusResolverRegistry();
    r.register(CredentialStatusType.SparseMerkleTreeProof, new IssuerResolver());
    return r;
  };

  async function issueBjj(holderDid: string): Promise<Json> {
    const res = await issuer.post('/issue-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
      proofType: 'BJJ_SIG_2021',
    });
    expect(res.status).toBe(201);
    const stored = [...issuer.emulator!.state.envelopes.values()]
      .filter((e) => e.envelope.holderDid === holderDid)
      .at(-1)!;
    return openEnvelope(holder.privateKey, stored.envelope) as Json;
  }

  it('available-vc offers BJJ_SIG_2021 with the same preview', async () => {
    const res = await issuer.post('/available-vc', {
      holderDID: HOLDER_DID_KEY,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      proofType: 'BJJ_SIG_2021',
    });
    const body = (await res.json()) as { data: Json[] };
    expect(body.data).toHaveLength(1);
    expect(body.data[0]!.proofType).toBe('BJJ_SIG_2021');
    expect(openEnvelope(holder.privateKey, fromPreviewFields(body.data[0]!.credentialSubject))).toMatchObject(
      { givenName: 'Alice' },
    );
  });

  it('issues a W3C credential js-sdk verifies, revokes it through /admin/revoke, and js-sdk sees it revoked', async () => {
    const holderDid = holderIden3Did(11n);
    const vc = await issueBjj(holderDid);
    expect(vc.issuer).toBe(issuer.ctx.iden3!.did);
    expect(vc.credentialSubject).toMatchObject({ id: holderDid, givenName: 'Alice', memberNumber: 1042 });
    const nonce = vc.credentialStatus.revocationNonce as number;
    expect(vc.credentialStatus).toEqual({
      id: `${issuer.url}/credential-status/${nonce}`,
      type: 'SparseMerkleTreeProof',
      revocationNonce: nonce,
    });
    const record = await issuer.ctx.store.issuances.getByNonce(nonce);
    expect(record).toMatchObject({
      proofType: 'BJJ_SIG_2021',
      statusSlot: null,
      uploadState: 'uploaded',
      kid: `${issuer.ctx.iden3!.did}#bjj`,
    });

    const w3c = W3CCredential.fromJSON(vc);
    const verify = () =>
      w3c.verifyProof(ProofType.BJJSignature, resolver.url, {
        credStatusResolverRegistry: registry(),
        merklizeOptions: { documentLoader: issuer.ctx.iden3!.documentLoader },
      });
    await expect(verify()).resolves.toBe(true);

    const before = await new IssuerResolver().resolve(w3c.credentialStatus);
    expect(before.mtp.existence).toBe(false);
    expect(
      await verifyProof(Hash.fromHex(before.issuer.revocationTreeRoot), before.mtp, BigInt(nonce), 0n),
    ).toBe(true);
    expect(await (await fetch(`${issuer.url}/revocation-status/${nonce}`)).json()).toMatchObject({
      isRevoked: false,
    });

    const revoked = await issuer.admin('/admin/revoke', {
      revocationNonce: String(nonce),
      proofType: 'BJJ_SIG_2021',
    });
    expect(revoked.status).toBe(200);
    expect(await revoked.json()).toMatchObject({ revocationNonce: String(nonce), isRevoked: true });

    const after = await new IssuerResolver().resolve(w3c.credentialStatus);
    expect(after.mtp.existence).toBe(true);
    expect(after.issuer.state).not.toBe(before.issuer.state);
    expect(
      await verifyProof(Hash.fromHex(after.issuer.revocationTreeRoot), after.mtp, BigInt(nonce), 0n),
    ).toBe(true);
    expect(await (await fetch(`${issuer.url}/revocation-status/${nonce}`)).json()).toMatchObject({
      isRevoked: true,
    });
    // The auth claim (nonce 0) is untouched: the issuer's other credentials still verify.
    const other = W3CCredential.fromJSON(await issueBjj(HOLDER_DID_KEY));
    await expect(
      other.verifyProof(ProofType.BJJSignature, resolver.url, {
        credStatusResolverRegistry: registry(),
        merklizeOptions: { documentLoader: issuer.ctx.iden3!.documentLoader },
      }),
    ).resolves.toBe(true);
  });

  it('publishes the Iden3 DID in did.json alsoKnownAs', async () => {
    const did = (await (await fetch(`${issuer.url}/.well-known/did.json`)).json()) as Json;
    expect(did.alsoKnownAs).toEqual([issuer.ctx.iden3!.did]);
    expect(issuer.ctx.iden3!.did).toMatch(/^did:iden3:privado:test:/);
  });

  it('/credential-status: nonce 0 works, non-numeric → 400', async () => {
    const zero = (await (await fetch(`${issuer.url}/credential-status/0`)).json()) as Json;
    expect(zero.mtp.existence).toBe(false);
    expect(Object.keys(zero.issuer).sort()).toEqual([
      'claimsTreeRoot',
      'revocationTreeRoot',
      'rootOfRoots',
      'state',
    ]);
    const bad = await fetch(`${issuer.url}/credential-status/abc`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Json).code).toBe('INVALID_PARAMETER');
  });

  it('claims that do not fit the schema → 422, nothing signed', async () => {
    await issuer.ctx.store.claims.upsertClaims([
      {
        userId: 'bjj-bad',
        schemaId: 'membership-v1',
        claims: {
          givenName: 'X',
          familyName: 'Y',
          memberSince: '2020-01-01',
          tier: 'diamond',
          memberNumber: 2,
        },
        expiresAt: null,
      },
    ]);
    const bad = await issuer.post('/issue-vc', {
      holderDID: HOLDER_DID_KEY,
      pubKey: holder.publicKeyHex,
      userId: 'bjj-bad',
      schemaId: 'membership-v1',
      proofType: 'BJJ_SIG_2021',
    });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as Json).code).toBe('CLAIMS_INVALID');
  });

  it('a restart keeps the DID, the trees and the revocations', async () => {
    const did = issuer.ctx.iden3!.did;
    const state = await issuer.ctx.iden3!.latestState();
    const [revoked] = await queryStore<{ n: number | string }>(
      issuer.ctx.store,
      "SELECT revocation_nonce AS n FROM issuances WHERE proof_type = 'BJJ_SIG_2021' AND status = 1",
    );
    const revokedNonce = Number(revoked!.n);
    const port = Number(new URL(issuer.url).port);
    await issuer.close();
    issuer = await startIssuer({ dir, port });
    expect(issuer.ctx.iden3!.did).toBe(did);
    expect(await issuer.ctx.iden3!.latestState()).toEqual(state);
    const status = (await (await fetch(`${issuer.url}/credential-status/${revokedNonce}`)).json()) as Json;
    expect(status.mtp.existence).toBe(true);
    expect(status.issuer).toEqual(state);
  });
});
