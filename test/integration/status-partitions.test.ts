import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openEnvelope } from '../../src/envelope/index.js';
import type { UploadBody } from '../../src/store/store.js';
import {
  describeIssued,
  fetchList,
  holder,
  holderKey,
  type IssuedSdJwt,
  issueOverHttp,
  seedMembers,
} from '../fixtures/status.js';
import { expectError } from '../helpers/errors.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';

const SMALL = { STATUS_LIST_BITS: '2', STATUS_LIST_PARTITION_SIZE: '16' };

// docs/interface.md "Public routes" and draft-ietf-oauth-status-list with STATUS_LIST_BITS=2 (SUSPENDED) and partitions
// of 16, so that partitions fill and the next one opens.
describe('2-bit status lists in partitions of 16', () => {
  let issuer: TestIssuer;
  let issued: IssuedSdJwt[];

  beforeAll(async () => {
    issuer = await startIssuer({ env: SMALL });
    const users = await seedMembers(issuer, 'two-bit', 17);
    // issue-vc: 17 concurrent requests over HTTP.
    issued = await Promise.all(users.map((u) => issueOverHttp(issuer, u)));
  });
  afterAll(async () => {
    await issuer.close();
  });

  const post = (path: string, vc: IssuedSdJwt) => issuer.admin(path, { revocationNonce: vc.nonce });
  const statusOf = async (vc: IssuedSdJwt) =>
    (await fetch(`${issuer.url}/revocation-status/${vc.nonce}`)).json();
  const listStatus = async (vc: IssuedSdJwt) => (await fetchList(vc.uri)).list.getStatus(vc.idx);

  it('17 concurrent issuances fill partition 0 and open partition 1; no index twice', async () => {
    const byPartition = new Map<number, number[]>();
    for (const vc of issued) {
      expect(vc.uri).toBe(`${issuer.url}/statuslist/${vc.partition}`);
      byPartition.set(vc.partition, [...(byPartition.get(vc.partition) ?? []), vc.idx]);
    }
    expect([...byPartition.keys()].sort()).toEqual([0, 1]);
    expect(byPartition.get(0)!.sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    expect(byPartition.get(1)).toHaveLength(1);
    expect(new Set(issued.map((vc) => vc.nonce)).size).toBe(17);
    // The index in each signed credential is the one recorded.
    for (const vc of issued) {
      const record = await issuer.ctx.store.issuances.getByNonce(Number(vc.nonce));
      expect(record!.statusSlot).toEqual({ partition: vc.partition, index: vc.idx });
    }
    const res = await issuer.admin('/admin/publish-token-status-list', {});
    const body = (await res.json()) as {
      partitions: Array<{ partition: number; size: number; uri: string }>;
    };
    expect(body.partitions.map(({ partition, size, uri }) => ({ partition, size, uri }))).toEqual([
      { partition: 0, size: 16, uri: `${issuer.url}/statuslist/0` },
      { partition: 1, size: 16, uri: `${issuer.url}/statuslist/1` },
    ]);
    const list = await fetchList(`${issuer.url}/statuslist/1`);
    expect(list.list.getBitsPerStatus()).toBe(2);
  });

  it('suspend → 2 in the list, unsuspend → 0; a suspended credential does not verify meanwhile', async () => {
    const vc = issued[0]!;
    expect((await verifySdJwtVc(issuer.url, vc.compact)).payload.iss).toBe(issuer.url);

    const suspended = await post('/admin/suspend', vc);
    expect(suspended.status).toBe(200);
    expect(await suspended.json()).toMatchObject({
      revocationNonce: vc.nonce,
      isRevoked: false,
      status: 'suspended',
    });
    expect(await listStatus(vc)).toBe(2);
    expect(await statusOf(vc)).toEqual({ isRevoked: false, status: 'suspended' });
    await expect(verifySdJwtVc(issuer.url, vc.compact)).rejects.toThrow();
    // Suspending twice is a no-op.
    expect((await post('/admin/suspend', vc)).status).toBe(200);

    const unsuspended = await post('/admin/unsuspend', vc);
    expect(unsuspended.status).toBe(200);
    expect(await unsuspended.json()).toMatchObject({ isRevoked: false, status: 'valid', revokedAt: null });
    expect(await listStatus(vc)).toBe(0);
    expect(await statusOf(vc)).toEqual({ isRevoked: false, status: 'valid' });
    expect((await verifySdJwtVc(issuer.url, vc.compact)).payload.iss).toBe(issuer.url);
  });

  it('revoked is final: revoke a suspended credential → 1; suspend or unsuspend after → 409', async () => {
    const vc = issued[1]!;
    expect((await post('/admin/suspend', vc)).status).toBe(200);
    const revoked = await post('/admin/revoke', vc);
    expect(revoked.status).toBe(200);
    const { revokedAt } = (await revoked.json()) as { revokedAt: string };
    expect(await listStatus(vc)).toBe(1);
    for (const path of ['/admin/suspend', '/admin/unsuspend']) {
      const res = await post(path, vc);
      await expectError(res, 409, 'CONFLICT');
    }
    expect(await listStatus(vc)).toBe(1);
    expect(await statusOf(vc)).toEqual({ isRevoked: true, status: 'revoked' });
    expect(await (await post('/admin/revoke', vc)).json()).toMatchObject({ isRevoked: true, revokedAt });
  });

  it('a change invalidates only its own partition’s cached token', async () => {
    const inZero = issued.filter((vc) => vc.partition === 0)[2]!;
    const [inOne] = issued.filter((vc) => vc.partition === 1);
    const zero = await fetchList(`${issuer.url}/statuslist/0`);
    const one = await fetchList(`${issuer.url}/statuslist/1`);

    expect((await post('/admin/revoke', inZero)).status).toBe(200);

    const zeroAfter = await fetch(`${issuer.url}/statuslist/0`, { headers: { 'if-none-match': zero.etag } });
    expect(zeroAfter.status).toBe(200);
    expect(zeroAfter.headers.get('etag')).not.toBe(zero.etag);
    const oneAfter = await fetch(`${issuer.url}/statuslist/1`, { headers: { 'if-none-match': one.etag } });
    expect(oneAfter.status).toBe(304);
    expect(oneAfter.headers.get('etag')).toBe(one.etag);
    expect((await issuer.ctx.status.partitionToken(1)).token).toBe(one.jwt);

    expect((await post('/admin/suspend', inOne!)).status).toBe(200);
    const zeroAgain = await fetch(`${issuer.url}/statuslist/0`, {
      headers: { 'if-none-match': zeroAfter.headers.get('etag')! },
    });
    expect(zeroAgain.status).toBe(304);
    expect(await listStatus(inOne!)).toBe(2);
  });
});

// Expiry sweeps nothing: an expired credential keeps its slot (and its status) for good.
describe('expired credentials keep their status slot', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await startIssuer({ env: SMALL });
  });
  afterAll(async () => {
    vi.useRealTimers();
    await issuer.close();
  });

  it('an expired credential’s index is never handed out again, and it can still be revoked', async () => {
    const schema = issuer.ctx.schemas.require('membership-v1');
    const claims = {
      givenName: 'Old',
      familyName: 'Timer',
      memberSince: '2019-01-01',
      tier: 'gold',
      memberNumber: 7,
    };
    // Issued a year ago for one hour: expired long since.
    const then = new Date(Date.now() - 365 * 86_400_000);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(then);
    const record = await issuer.ctx.issuance.signAndRecord({
      issuer: issuer.ctx.issuance.requireIssuer(schema, 'SD_JWT_VC'),
      channel: 'direct',
      userId: 'old-timer',
      holderDid: 'did:example:old-timer',
      schema,
      proofType: 'SD_JWT_VC',
      claims,
      expiresAt: new Date(then.getTime() + 3_600_000),
      encryptTo: holderKey,
      dedupe: false,
    });
    vi.useRealTimers();
    const old = describeIssued(
      openEnvelope(holder.privateKey, record.envelope as UploadBody) as string,
      record.revocationNonce,
    );
    expect(record.expiresAt.getTime()).toBeLessThan(Date.now());
    expect(old.partition).toBe(0);

    // 16 more fill the rest of partition 0 (15) and open partition 1; none takes the expired slot.
    const users = await seedMembers(issuer, 'after-expiry', 16);
    const later: IssuedSdJwt[] = [];
    for (const u of users) later.push(await issueOverHttp(issuer, u));
    const zero = later.filter((vc) => vc.partition === 0).map((vc) => vc.idx);
    expect(zero).toHaveLength(15);
    expect(zero).not.toContain(old.idx);
    expect(new Set([...zero, old.idx]).size).toBe(16);
    expect(later.filter((vc) => vc.partition === 1)).toHaveLength(1);
    expect((await issuer.ctx.store.issuances.getByNonce(record.revocationNonce))!.statusSlot).toEqual({
      partition: 0,
      index: old.idx,
    });

    const res = await issuer.admin('/admin/revoke', { revocationNonce: old.nonce });
    expect(res.status).toBe(200);
    expect((await fetchList(old.uri)).list.getStatus(old.idx)).toBe(1);
    expect(await (await fetch(`${issuer.url}/revocation-status/${old.nonce}`)).json()).toEqual({
      isRevoked: true,
      status: 'revoked',
    });
  });
});

// docs/several-instances.md "Storage engines": two servers behind one origin share the database file; the token cache lives there.
describe('two servers sharing one database', () => {
  let a: TestIssuer;
  let b: TestIssuer;
  beforeAll(async () => {
    a = await startIssuer({ env: SMALL });
    b = await startIssuer({ dir: a.dir, env: { ...SMALL, ISSUER_ORIGIN: a.url } });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('a revoke on one server is in the next list the other serves', async () => {
    const [user] = await seedMembers(a, 'shared', 1);
    const vc = await issueOverHttp(a, user!);
    const fromA = await fetchList(vc.uri);
    expect(fromA.list.getStatus(vc.idx)).toBe(0);
    const viaB = `${b.url}/statuslist/${vc.partition}`;
    expect((await fetch(viaB, { headers: { 'if-none-match': fromA.etag } })).status).toBe(304);

    const res = await b.admin('/admin/suspend', { revocationNonce: vc.nonce });
    expect(res.status).toBe(200);
    const afterA = await fetchList(vc.uri);
    expect(afterA.list.getStatus(vc.idx)).toBe(2);
    // Whichever server signed it, both now serve the same cached token.
    expect((await fetch(viaB, { headers: { 'if-none-match': afterA.etag } })).status).toBe(304);
    expect(await (await fetch(`${b.url}/revocation-status/${vc.nonce}`)).json()).toEqual({
      isRevoked: false,
      status: 'suspended',
    });
  });
});
