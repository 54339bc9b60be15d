import { describe, expect, it } from 'vitest';
import {
  fromPreviewFields,
  generateHolderKeyPair,
  openEnvelope,
  parseHolderPublicKey,
} from '../../../src/envelope/index.js';
import { IssuerUrls } from '../../../src/identity/issuer-identity.js';
import { HostedIssuanceService } from '../../../src/issuance/hosted-issuance.js';
import { IssuanceCore } from '../../../src/issuance/issuance-core.js';
import type { ProofType } from '../../../src/model.js';
import type { UploadBody } from '../../../src/store/store.js';
import {
  asOutbox,
  bundledSchemas,
  FakeClaimsProvider,
  FakeIssuer,
  FakeOutbox,
  MEMBER_CLAIMS,
  MemoryIssuanceStore,
} from '../../fakes/issuance.js';
import { expectAppError } from '../../helpers/errors.js';

const ORIGIN = 'https://issuer.example';
const NOW = new Date('2025-03-04T05:06:07.890Z');
const YEAR_SECONDS = 31_536_000; // membership-v1 expiresInSeconds
const holder = generateHolderKeyPair('x25519');
const holderKey = parseHolderPublicKey(holder.publicKeyHex, 'pubKey');

/** The hosted flow and its core over fakes that log, in order, what each part was asked to do. */
function setup(proofTypes: ProofType[] = ['SD_JWT_VC']) {
  const events: string[] = [];
  const store = new MemoryIssuanceStore(events);
  const outbox = new FakeOutbox(store, events);
  const claims = new FakeClaimsProvider(events);
  const issuers = new Map(proofTypes.map((p) => [p, new FakeIssuer(p, events)] as const));
  const schemas = bundledSchemas();
  const identity = {
    urls: new IssuerUrls(ORIGIN),
    statusLists: { partitionSize: 4, bits: 2, ttlSeconds: 300 } as const,
    catalog: { schemas, claimsProviders: new Map([['membership-v1', claims]]) },
  };
  const core = new IssuanceCore({
    identity,
    issuers,
    store,
    outbox: asOutbox(outbox),
    uploadTimeoutMs: 10_000,
    now: () => NOW,
  });
  const service = new HostedIssuanceService({ core, identity, now: () => NOW });
  claims.answers.set('ada', { eligible: true, credentialSubject: { ...MEMBER_CLAIMS } });
  const sdJwt = issuers.get('SD_JWT_VC')!;
  return { events, store, outbox, claims, issuers, sdJwt, service };
}

const hosted = (userId = 'ada', proofType: ProofType = 'SD_JWT_VC') => ({
  holderDid: `did:example:${userId}`,
  userId,
  schemaId: 'membership-v1',
  proofType,
  encryptTo: holderKey,
});

// docs/interface.md "issue-vc" and docs/several-instances.md "Storage engines", through
// `HostedIssuanceService` and its core alone.
describe('HostedIssuanceService.issueHosted', () => {
  it('looks up claims, signs, records, then uploads; the envelope holds what was signed', async () => {
    const { events, store, sdJwt, service } = setup();
    const record = await service.issueHosted(hosted());

    expect(events).toEqual(['claims', 'sign', 'insert', 'upload']);
    expect(record).toMatchObject({ uploadState: 'uploaded', storagePath: `/vcs/${record.credentialId}` });
    expect(await store.get(record.credentialId)).toMatchObject({
      uploadState: 'uploaded',
      channel: 'hosted',
      userId: 'ada',
      kid: 'fake-kid',
    });
    const [signed] = sdJwt.inputs;
    expect(signed).toMatchObject({
      credentialId: record.credentialId,
      holderDid: 'did:example:ada',
      claims: MEMBER_CLAIMS,
      revocationNonce: record.revocationNonce,
      status: { idx: record.statusSlot!.index, uri: `${ORIGIN}/statuslist/${record.statusSlot!.partition}` },
    });
    // Whole seconds (JWT NumericDate), and the schema's lifetime from the frozen clock.
    expect(signed!.issuedAt).toEqual(new Date('2025-03-04T05:06:07.000Z'));
    expect(signed!.expiresAt).toEqual(new Date(Date.parse('2025-03-04T05:06:07.000Z') + YEAR_SECONDS * 1000));
    expect(record.envelope).toMatchObject({ externalId: record.credentialId, holderDid: 'did:example:ada' });
    expect(openEnvelope(holder.privateKey, record.envelope as UploadBody)).toBe(
      `signed:${record.credentialId}:${record.revocationNonce}`,
    );
  });

  it("drops the provider's subject id and keeps the expiry it answers", async () => {
    const { claims, sdJwt, service } = setup();
    const expiresAt = new Date('2025-06-01T00:00:00.000Z');
    claims.answers.set('ada', {
      eligible: true,
      credentialSubject: { id: 'did:example:other', ...MEMBER_CLAIMS },
      expiresAt,
    });
    const record = await service.issueHosted(hosted());
    expect(sdJwt.inputs[0]!.claims).toEqual(MEMBER_CLAIMS);
    expect(record.expiresAt).toEqual(expiresAt);
  });

  it('a repeat with the same holder and claims returns the live original without signing', async () => {
    const { events, store, sdJwt, service } = setup();
    const first = await service.issueHosted(hosted());
    events.length = 0;
    const again = await service.issueHosted(hosted());
    expect(again.credentialId).toBe(first.credentialId);
    expect(events).toEqual(['claims']);
    expect(sdJwt.inputs).toHaveLength(1);
    expect(store.records.size).toBe(1);
  });

  it('a repeat whose original upload is still pending tries that upload again', async () => {
    const { events, outbox, store, service } = setup();
    outbox.fail = new Error('dstorage down');
    const failed = await expectAppError(service.issueHosted(hosted()), 502, 'UPSTREAM_UNAVAILABLE');
    const { credentialId } = failed.details as { credentialId: string };
    outbox.fail = undefined;
    events.length = 0;
    const again = await service.issueHosted(hosted());
    expect(again).toMatchObject({ credentialId, uploadState: 'uploaded' });
    expect(events).toEqual(['claims', 'upload']);
    expect(store.records.size).toBe(1);
  });

  it('other claims for the same holder are a new issuance', async () => {
    const { claims, store, service } = setup();
    const first = await service.issueHosted(hosted());
    claims.answers.set('ada', { eligible: true, credentialSubject: { ...MEMBER_CLAIMS, tier: 'basic' } });
    const second = await service.issueHosted(hosted());
    expect(second.credentialId).not.toBe(first.credentialId);
    expect(store.records.size).toBe(2);
  });

  it('a slot or nonce taken between proposal and commit is proposed again and signed again', async () => {
    const { events, store, sdJwt, service } = setup();
    store.forced.push('slot-taken', 'nonce-taken');
    const record = await service.issueHosted(hosted());
    expect(events).toEqual(['claims', 'sign', 'insert', 'sign', 'insert', 'sign', 'insert', 'upload']);
    const [a, b, c] = sdJwt.inputs;
    // One credential id throughout; each attempt has its own nonce and slot, and the last one counts.
    expect(new Set(sdJwt.inputs.map((i) => i.credentialId))).toEqual(new Set([record.credentialId]));
    expect(new Set([a!.revocationNonce, b!.revocationNonce, c!.revocationNonce]).size).toBe(3);
    expect(new Set([a!.status!.idx, b!.status!.idx, c!.status!.idx]).size).toBe(3);
    expect(c).toMatchObject({
      revocationNonce: record.revocationNonce,
      status: { idx: record.statusSlot!.index },
    });
    expect(openEnvelope(holder.privateKey, record.envelope as UploadBody)).toBe(
      `signed:${record.credentialId}:${record.revocationNonce}`,
    );
  });

  it('gives up with 500 after 16 lost races, having recorded and uploaded nothing', async () => {
    const { events, store, sdJwt, service } = setup();
    store.forced.push(...Array.from({ length: 16 }, () => 'slot-taken' as const));
    await expectAppError(service.issueHosted(hosted()), 500, 'INTERNAL');
    expect(sdJwt.inputs).toHaveLength(16);
    expect(events).not.toContain('upload');
    expect(store.records.size).toBe(0);
  });

  it('an upload failure answers 502 naming the credential, which stays recorded and pending', async () => {
    const { outbox, store, service } = setup();
    outbox.fail = new Error('dstorage/vcs answered 503');
    const err = await expectAppError(service.issueHosted(hosted()), 502, 'UPSTREAM_UNAVAILABLE');
    const { credentialId } = err.details as { credentialId: string };
    expect(await store.get(credentialId)).toMatchObject({
      uploadState: 'pending',
      uploadAttempts: 1,
      lastError: 'dstorage/vcs answered 503',
    });
  });

  it('a user without claims for the schema → 404 naming userId; nothing is signed', async () => {
    const { events, service } = setup();
    await expectAppError(service.issueHosted(hosted('nobody')), 404, 'NOT_FOUND', 'userId');
    expect(events).toEqual(['claims']);
  });

  it('a claims source that cannot answer → 502, never "not eligible"', async () => {
    const { claims, events, service } = setup();
    claims.fail = new Error('connection refused');
    await expectAppError(service.issueHosted(hosted()), 502, 'UPSTREAM_UNAVAILABLE');
    expect(events).toEqual(['claims']);
  });

  it('claims that do not fit the schema → 422 before signing', async () => {
    const { claims, events, service } = setup();
    claims.answers.set('ada', { eligible: true, credentialSubject: { ...MEMBER_CLAIMS, tier: 'wood' } });
    await expectAppError(service.issueHosted(hosted()), 422, 'CLAIMS_INVALID');
    expect(events).toEqual(['claims']);
  });

  it('an expiry already past → 422 naming expiresAt', async () => {
    const { claims, events, service } = setup();
    claims.answers.set('ada', {
      eligible: true,
      credentialSubject: { ...MEMBER_CLAIMS },
      expiresAt: new Date(NOW.getTime() - 1000),
    });
    await expectAppError(service.issueHosted(hosted()), 422, 'CLAIMS_INVALID', 'expiresAt');
    expect(events).toEqual(['claims']);
  });

  it('a proof type without a back-end → 400 naming proofType; an unknown schema → 404', async () => {
    const { events, service } = setup(['SD_JWT_VC']);
    await expectAppError(
      service.issueHosted(hosted('ada', 'BJJ_SIG_2021')),
      400,
      'INVALID_PARAMETER',
      'proofType',
    );
    await expectAppError(
      service.issueHosted({ ...hosted(), schemaId: 'nope-v1' }),
      404,
      'NOT_FOUND',
      'schemaId',
    );
    expect(events).toEqual([]);
  });

  it('a back-end without status lists gets no slot', async () => {
    const { issuers, service } = setup(['SD_JWT_VC', 'BJJ_SIG_2021']);
    const record = await service.issueHosted(hosted('ada', 'BJJ_SIG_2021'));
    expect(record.statusSlot).toBeNull();
    expect(issuers.get('BJJ_SIG_2021')!.inputs[0]!.status).toBeUndefined();
  });
});

// docs/interface.md "available-vc".
describe('HostedIssuanceService.availableVc', () => {
  it('one encrypted preview per eligible proof type, without the subject id; none when not eligible', async () => {
    const { claims, events, service } = setup(['SD_JWT_VC', 'BJJ_SIG_2021']);
    claims.answers.set('ada', {
      eligible: true,
      credentialSubject: { id: 'did:example:x', ...MEMBER_CLAIMS },
    });
    const entries = await service.availableVc({
      holderDid: 'did:example:ada',
      userId: 'ada',
      pubKey: holderKey,
    });
    expect(entries.map((e) => [e.schemaId, e.proofType])).toEqual([
      ['membership-v1', 'SD_JWT_VC'],
      ['membership-v1', 'BJJ_SIG_2021'],
    ]);
    for (const e of entries)
      expect(openEnvelope(holder.privateKey, fromPreviewFields(e.credentialSubject))).toEqual(MEMBER_CLAIMS);
    expect(events).toEqual(['claims', 'claims']);

    expect(
      await service.availableVc({ holderDid: 'did:example:no', userId: 'nobody', pubKey: holderKey }),
    ).toEqual([]);
  });
});
