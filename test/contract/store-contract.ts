import { createHash, randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ID_BYTES } from '../../src/model.js';
import { SCAN_LIMIT } from '../../src/store/keyset.js';
import type {
  Iden3TreeName,
  Iden3TreeWrites,
  NewIden3State,
  NewIssuance,
  StatusSlot,
  Store,
} from '../../src/store/store.js';
import { allocateThroughSignAndRecord } from '../fixtures/status.js';

/**
 * The store contract (docs/several-instances.md "Storage engines"), run against every engine: each engine's test file calls
 * `describeStoreContract` with a function that opens an empty store.
 */
export type OpenEmptyStore = () => Promise<Store>;

const T0 = new Date('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const YEAR = 365 * 86_400_000;
// The largest nonce allowed (below 2^53, docs/schemas-and-claims.md): kept exact by every engine.
const MAX_NONCE = 2 ** 53 - 1;
// The SHA-256 of issuance()'s ciphertext ('ZGF0YQ==', the bytes of "data").
const DATA_SHA256 = createHash('sha256').update('data').digest('hex');

const historyBase = {
  limit: 50,
  order: 'createdAt_desc' as const,
  now: new Date('2030-06-01T00:00:00.000Z'),
};

let nonces = 1;
export function issuance(extra: Partial<NewIssuance> = {}): NewIssuance {
  const credentialId = randomUUID();
  return {
    credentialId,
    channel: 'hosted',
    userId: 'user-1',
    holderDid: 'did:example:holder',
    schemaId: 'membership-v1',
    proofType: 'SD_JWT_VC',
    revocationNonce: nonces++,
    statusSlot: null,
    subjectHash: `subject-${credentialId}`,
    kid: 'kid-1',
    createdAt: T0,
    expiresAt: at(YEAR),
    envelope: {
      holderDid: 'did:example:holder',
      schemaId: 'membership-v1',
      expiresAt: at(YEAR).toISOString(),
      data: 'ZGF0YQ==',
      iv: 'aXY=',
      authTag: 'dGFn',
      encryptedKey: 'a2V5',
      externalId: credentialId,
    },
    ...extra,
  };
}

export function describeStoreContract(engine: string, openEmpty: OpenEmptyStore): void {
  describe(`store contract: ${engine}`, () => {
    let opened: Store[] = [];
    const open = async () => {
      const s = await openEmpty();
      opened.push(s);
      return s;
    };
    afterEach(async () => {
      await Promise.all(opened.map((s) => s.close()));
      opened = [];
    });

    async function insert(store: Store, n: NewIssuance, dedupe = false) {
      const outcome = await store.issuances.insertIssuance(n, { dedupe });
      if (outcome.kind !== 'inserted') throw new Error(`expected inserted, got ${outcome.kind}`);
      return outcome.record;
    }
    async function slotted(store: Store, extra: Partial<NewIssuance> = {}, size = 64, bits: 1 | 2 = 1) {
      const slot = await store.issuances.proposeStatusSlot(size, bits);
      return insert(store, issuance({ statusSlot: slot, ...extra }));
    }

    it('a named lock has one owner until released or its lease ends', async () => {
      const store = await open();
      const wins = await Promise.all(
        ['a', 'b', 'c', 'd'].map((owner) => store.locks.tryAcquire('direct:x', owner, 60_000)),
      );
      expect(wins.filter(Boolean)).toHaveLength(1);
      const owner = ['a', 'b', 'c', 'd'][wins.indexOf(true)]!;
      await store.locks.release('direct:x', 'not-the-owner');
      expect(await store.locks.tryAcquire('direct:x', 'e', 60_000)).toBe(false);
      // Another name is another lock.
      expect(await store.locks.tryAcquire('renewal-sweep', 'e', 60_000)).toBe(true);
      await store.locks.release('direct:x', owner);
      // A lease that has ended is taken over (a holder that died).
      expect(await store.locks.tryAcquire('direct:x', 'f', -1)).toBe(true);
      expect(await store.locks.tryAcquire('direct:x', 'g', 60_000)).toBe(true);
      expect(await store.locks.tryAcquire('direct:x', 'h', 60_000)).toBe(false);
      // Renewed by its owner only; a lease that ran out and was taken is not the old owner's.
      expect(await store.locks.renew('direct:x', 'h', 60_000)).toBe(false);
      expect(await store.locks.renew('direct:x', 'g', -1)).toBe(true);
      expect(await store.locks.tryAcquire('direct:x', 'i', 60_000)).toBe(true);
      expect(await store.locks.renew('direct:x', 'g', 60_000)).toBe(false);
      expect(await store.locks.renew('direct:x', 'i', 60_000)).toBe(true);
    });

    describe('issuances', () => {
      it('records an issuance and reads it back field for field, by id and by nonce', async () => {
        const store = await open();
        const slot = await store.issuances.proposeStatusSlot(64, 2);
        const n = issuance({ statusSlot: slot, revocationNonce: MAX_NONCE, uploadDueAt: at(5000) });
        const record = await insert(store, n);
        const { uploadDueAt: _, ...written } = n;
        const expected = {
          ...written,
          envelopeSha256: DATA_SHA256,
          status: 0,
          revokedAt: null,
          suspendedAt: null,
          uploadState: 'pending',
          uploadAttempts: 0,
          nextAttemptAt: at(5000),
          lastError: null,
          storagePath: null,
          uploadedAt: null,
        };
        expect(record).toEqual(expected);
        expect(await store.issuances.get(n.credentialId)).toEqual(expected);
        expect(await store.issuances.getByNonce(MAX_NONCE)).toEqual(expected);
        expect(await store.issuances.nonceInUse(MAX_NONCE)).toBe(true);
        expect(await store.issuances.nonceInUse(MAX_NONCE - 1)).toBe(false);
        expect(await store.issuances.get(randomUUID())).toBeUndefined();
        expect(await store.issuances.getByNonce(MAX_NONCE - 1)).toBeUndefined();
      });

      it('the longest ids the edge accepts fit every index (PostgreSQL B-tree entries hold 2,704 bytes)', async () => {
        // docs/interface.md "Field limits": ids are bounded in UTF-8 bytes at the edge, so what
        // passes there must fit here on both engines, dedupe and claims indexes included.
        const store = await open();
        const holderDid = `did:example:${'h'.repeat(MAX_ID_BYTES - 'did:example:'.length)}`;
        const userId = '漢'.repeat(Math.floor(MAX_ID_BYTES / 3));
        const schemaId = '漢'.repeat(255);
        const n = issuance({ holderDid, userId, schemaId, subjectHash: 'f'.repeat(64) });
        await insert(store, n, true);
        expect(await store.issuances.get(n.credentialId)).toMatchObject({ holderDid, userId, schemaId });
        const repeat = await store.issuances.insertIssuance(
          issuance({ holderDid, userId, schemaId, subjectHash: 'f'.repeat(64) }),
          {
            dedupe: true,
          },
        );
        expect(repeat.kind).not.toBe('inserted');
        expect(
          await store.claims.upsertClaims([{ userId, schemaId, claims: { a: 1 }, expiresAt: null }]),
        ).toBe(1);
        expect(await store.claims.getClaims(userId, schemaId)).toMatchObject({ claims: { a: 1 } });
      });

      it('refuses a taken slot or nonce, a full or unknown partition and an index beyond the size', async () => {
        const store = await open();
        const slot = await store.issuances.proposeStatusSlot(8, 1);
        expect(slot.partition).toBe(0);
        expect(slot.index).toBeGreaterThanOrEqual(0);
        expect(slot.index).toBeLessThan(8);
        const first = await insert(store, issuance({ statusSlot: slot }));
        const again = (s: StatusSlot | null, nonce = nonces++) =>
          store.issuances.insertIssuance(issuance({ statusSlot: s, revocationNonce: nonce }), {
            dedupe: false,
          });
        expect((await again(slot)).kind).toBe('slot-taken');
        expect((await again(await store.issuances.proposeStatusSlot(8, 1), first.revocationNonce)).kind).toBe(
          'nonce-taken',
        );
        expect((await again(null, first.revocationNonce)).kind).toBe('nonce-taken');
        expect((await again({ partition: 0, index: 8 })).kind).toBe('slot-taken');
        expect((await again({ partition: 7, index: 0 })).kind).toBe('slot-taken');
        const taken = new Set([slot.index]);
        for (let i = 1; i < 8; i++) {
          const s = await store.issuances.proposeStatusSlot(8, 1);
          expect(s.partition).toBe(0);
          expect(taken.has(s.index)).toBe(false);
          taken.add(s.index);
          await insert(store, issuance({ statusSlot: s }));
        }
        // Partition 0 is full: the next proposal opens partition 1.
        expect((await store.issuances.proposeStatusSlot(8, 1)).partition).toBe(1);
        expect(await store.status.listPartitions()).toMatchObject([
          { partition: 0, size: 8, bits: 1, allocated: 8 },
          { partition: 1, size: 8, bits: 1, allocated: 0 },
        ]);
      });

      it('opens a new partition when the configured size or bits change', async () => {
        const store = await open();
        const a = await slotted(store, {}, 16, 1);
        const b = await store.issuances.proposeStatusSlot(16, 2);
        expect(b.partition).toBe(a.statusSlot!.partition + 1);
        expect((await store.status.getPartition(b.partition))?.bits).toBe(2);
        expect((await store.issuances.proposeStatusSlot(32, 2)).partition).toBe(b.partition + 1);
        // Back to the first configuration: its partition still has room.
        expect((await store.issuances.proposeStatusSlot(16, 1)).partition).toBe(a.statusSlot!.partition);
      });

      it('concurrent issuances never share a slot or a nonce, and the partition counts them all', async () => {
        const store = await open();
        const results = await Promise.all(
          Array.from({ length: 120 }, () => allocateThroughSignAndRecord(store.issuances, 128, 1)),
        );
        const slots = new Set(results.map((r) => `${r.slot.partition}:${r.slot.index}`));
        expect(slots.size).toBe(120);
        expect(new Set(results.map((r) => r.revocationNonce)).size).toBe(120);
        const partitions = await store.status.listPartitions();
        expect(partitions.reduce((sum, p) => sum + p.allocated, 0)).toBe(120);
      });

      it('the same credential id is a duplicate, with or without dedupe', async () => {
        const store = await open();
        const first = await insert(store, issuance());
        for (const dedupe of [false, true]) {
          const outcome = await store.issuances.insertIssuance(
            issuance({ credentialId: first.credentialId, subjectHash: `other-${dedupe}` }),
            { dedupe },
          );
          expect(outcome).toMatchObject({ kind: 'duplicate', record: { credentialId: first.credentialId } });
        }
      });

      it('a batch commits whole: every issuance with its slot and batch id, or none when one slot, nonce or id is taken', async () => {
        const store = await open();
        const taken = await slotted(store);
        const batch = async (n: number, at: Partial<NewIssuance> = {}, where = -1) => {
          const ns: NewIssuance[] = [];
          const slots = new Set<string>([`${taken.statusSlot!.partition}:${taken.statusSlot!.index}`]);
          while (ns.length < n) {
            const slot = await store.issuances.proposeStatusSlot(64, 1);
            if (slots.has(`${slot.partition}:${slot.index}`)) continue;
            slots.add(`${slot.partition}:${slot.index}`);
            ns.push(issuance({ statusSlot: slot, channel: 'oid4vci', envelope: null, batchId: 'batch-b1' }));
          }
          if (where >= 0) ns[where] = { ...ns[where]!, ...at };
          return store.issuances.insertIssuances(ns, { audit: { actor: 'admin:test', reason: 'batch' } });
        };
        const rows = async () => (await store.history.list({ ...historyBase, batchId: 'batch-b1' })).records;
        expect((await batch(4, { statusSlot: taken.statusSlot }, 2)).kind).toBe('slot-taken');
        expect((await batch(4, { revocationNonce: taken.revocationNonce }, 3)).kind).toBe('nonce-taken');
        expect((await batch(4, { credentialId: taken.credentialId }, 1)).kind).toBe('duplicate');
        expect(await rows()).toHaveLength(0);
        expect((await store.status.listPartitions())[0]!.allocated).toBe(1);
        const ok = await batch(5);
        if (ok.kind !== 'inserted') throw new Error(`expected inserted, got ${ok.kind}`);
        expect(ok.records).toHaveLength(5);
        const recorded = await rows();
        expect(recorded.map((r) => r.credentialId).sort()).toEqual(
          ok.records.map((r) => r.credentialId).sort(),
        );
        for (const r of ok.records)
          expect(await store.issuances.get(r.credentialId)).toMatchObject({
            uploadState: 'none',
            statusSlot: r.statusSlot,
          });
        expect(await store.history.batchOf(ok.records[0]!.credentialId)).toBe('batch-b1');
        expect((await store.status.listPartitions())[0]!.allocated).toBe(6);
      });

      it('the same credential id asked for twice at the same moment records one credential', async () => {
        const store = await open();
        const id = issuance().credentialId;
        const outcomes = await Promise.all(
          ['one', 'two'].map((subject) =>
            store.issuances.insertIssuance(issuance({ credentialId: id, subjectHash: subject }), {
              dedupe: false,
            }),
          ),
        );
        expect(outcomes.map((o) => o.kind).sort()).toEqual(['duplicate', 'inserted']);
        expect(outcomes.find((o) => o.kind === 'duplicate')).toMatchObject({ record: { credentialId: id } });
        expect((await store.issuances.get(id))?.subjectHash).toBe(
          outcomes[0]!.kind === 'inserted' ? 'one' : 'two',
        );
      });

      it('a hosted repeat finds the live original; revoked, expired, direct or undeduped ones do not', async () => {
        const store = await open();
        const first = await insert(store, issuance({ subjectHash: 'same' }), true);
        const repeat = await store.issuances.insertIssuance(issuance({ subjectHash: 'same' }), {
          dedupe: true,
        });
        expect(repeat).toMatchObject({ kind: 'duplicate', record: { credentialId: first.credentialId } });
        const query = {
          holderDid: first.holderDid,
          schemaId: first.schemaId,
          proofType: first.proofType,
          subjectHash: 'same',
          now: T0,
        };
        expect((await store.issuances.findLiveDuplicate(query))?.credentialId).toBe(first.credentialId);
        expect(
          await store.issuances.findLiveDuplicate({ ...query, proofType: 'BJJ_SIG_2021' }),
        ).toBeUndefined();
        expect(await store.issuances.findLiveDuplicate({ ...query, now: at(2 * YEAR) })).toBeUndefined();
        // dedupe: false records a second credential with the same subject.
        await insert(store, issuance({ subjectHash: 'same' }), false);
        await store.status.changeStatus(first.revocationNonce, 'revoke', T0);
        const after = await store.issuances.findLiveDuplicate(query);
        expect(after?.credentialId).not.toBe(first.credentialId);
        // A direct issuance is never a hosted duplicate.
        await insert(store, issuance({ subjectHash: 'direct', channel: 'direct' }));
        expect(await store.issuances.findLiveDuplicate({ ...query, subjectHash: 'direct' })).toBeUndefined();
      });

      it('concurrent identical hosted requests record one credential', async () => {
        const store = await open();
        const outcomes = await Promise.all(
          Array.from({ length: 8 }, () =>
            store.issuances.insertIssuance(issuance({ subjectHash: 'raced' }), { dedupe: true }),
          ),
        );
        expect(outcomes.filter((o) => o.kind === 'inserted')).toHaveLength(1);
        expect(outcomes.filter((o) => o.kind === 'duplicate')).toHaveLength(7);
      });

      // An engine may serve calls made at the same moment together (PostgreSQL: one round trip).
      it('lookups, slot proposals and upload marks made at the same moment each get their own answer', async () => {
        const store = await open();
        const originals = [];
        for (const i of [0, 1, 2])
          originals.push(await insert(store, issuance({ subjectHash: `s${i}` }), true));
        const query = (subjectHash: string) => ({
          holderDid: 'did:example:holder',
          schemaId: 'membership-v1',
          proofType: 'SD_JWT_VC' as const,
          subjectHash,
          now: T0,
        });
        await store.issuances.proposeStatusSlot(4096, 1);
        const found = await Promise.all(
          ['s0', 'new-a', 's1', 'new-b', 's2', ...Array.from({ length: 15 }, (_, i) => `new-${i}`)].map((s) =>
            store.issuances.findLiveDuplicate(query(s)),
          ),
        );
        expect(found.slice(0, 5).map((r) => r?.credentialId)).toEqual([
          originals[0]!.credentialId,
          undefined,
          originals[1]!.credentialId,
          undefined,
          originals[2]!.credentialId,
        ]);
        expect(found.slice(5).every((r) => r === undefined)).toBe(true);
        // Each proposal is free when made: inserted right after, none is taken.
        const slots = new Set<string>();
        for (let i = 0; i < 20; i++) {
          const slot = await store.issuances.proposeStatusSlot(4096, 1);
          await insert(store, issuance({ statusSlot: slot }));
          slots.add(`${slot.partition}:${slot.index}`);
        }
        expect(slots.size).toBe(20);
        await Promise.all(
          originals.map((r, i) => store.issuances.markUploaded(r.credentialId, `/vcs/${i}`, at(i * 1000))),
        );
        for (const [i, r] of originals.entries())
          expect(await store.issuances.get(r.credentialId)).toMatchObject({
            uploadState: 'uploaded',
            storagePath: `/vcs/${i}`,
            uploadedAt: at(i * 1000),
            uploadAttempts: 1,
          });
      });

      it('latestExpiryForKid is the latest expiry among the key credentials', async () => {
        const store = await open();
        await insert(store, issuance({ kid: 'a', expiresAt: at(1000) }));
        await insert(store, issuance({ kid: 'a', expiresAt: at(3000) }));
        await insert(store, issuance({ kid: 'b', expiresAt: at(9000) }));
        expect(await store.issuances.latestExpiryForKid('a')).toEqual(at(3000));
        expect(await store.issuances.latestExpiryForKid('none')).toBeUndefined();
      });
    });

    describe('upload outbox', () => {
      it('leases due uploads once, up to the limit, and hands an expired lease over', async () => {
        const store = await open();
        const due = [];
        for (let i = 0; i < 3; i++) due.push(await insert(store, issuance({ uploadDueAt: at(i) })));
        await insert(store, issuance({ uploadDueAt: at(60_000) }));
        const lease = 30_000;
        const firstTwo = await store.issuances.leaseDueUploads(at(100), lease, 2);
        expect(firstTwo.map((r) => r.credentialId)).toEqual([due[0]!.credentialId, due[1]!.credentialId]);
        expect(firstTwo[0]!.envelope).toEqual(due[0]!.envelope);
        const rest = await store.issuances.leaseDueUploads(at(100), lease, 10);
        expect(rest.map((r) => r.credentialId)).toEqual([due[2]!.credentialId]);
        expect(await store.issuances.leaseDueUploads(at(200), lease, 10)).toEqual([]);
        // The leases end: the three are taken over; the fourth is now due as well.
        const later = await store.issuances.leaseDueUploads(at(lease + 60_001), lease, 10);
        expect(later).toHaveLength(4);
      });

      it('leaseUpload: one holder at a time, none once uploaded', async () => {
        const store = await open();
        const r = await insert(store, issuance());
        expect(await store.issuances.leaseUpload(r.credentialId, T0, 1000)).toBe(true);
        expect(await store.issuances.leaseUpload(r.credentialId, at(999), 1000)).toBe(false);
        expect(await store.issuances.leaseDueUploads(at(999), 1000, 10)).toEqual([]);
        expect(await store.issuances.leaseUpload(r.credentialId, at(1001), 1000)).toBe(true);
        await store.issuances.markUploaded(r.credentialId, '/vcs/1', at(1500));
        expect(await store.issuances.leaseUpload(r.credentialId, at(5000), 1000)).toBe(false);
        expect(await store.issuances.leaseUpload(randomUUID(), at(5000), 1000)).toBe(false);
      });

      it('concurrent workers take disjoint uploads and exactly one gets a contested one', async () => {
        const store = await open();
        const ids = [];
        for (let i = 0; i < 20; i++) ids.push((await insert(store, issuance())).credentialId);
        const batches = await Promise.all(
          Array.from({ length: 4 }, () => store.issuances.leaseDueUploads(at(1), 60_000, 20)),
        );
        const taken = batches.flat().map((r) => r.credentialId);
        expect(taken.sort()).toEqual([...ids].sort());
        const contested = (await insert(store, issuance())).credentialId;
        const wins = await Promise.all(
          Array.from({ length: 6 }, () => store.issuances.leaseUpload(contested, at(1), 60_000)),
        );
        expect(wins.filter(Boolean)).toHaveLength(1);
      });

      it('markUploaded and markUploadFailed record the outcome; pending counts and next due follow', async () => {
        const store = await open();
        const a = await insert(store, issuance({ uploadDueAt: at(10) }));
        const b = await insert(store, issuance({ uploadDueAt: at(20) }));
        expect(await store.issuances.countPendingUploads()).toBe(2);
        expect(await store.issuances.nextUploadDue()).toEqual(at(10));
        // The insert held the upload's lease until uploadDueAt (the request uploads it itself).
        expect(await store.issuances.leaseUpload(a.credentialId, at(9), 1000)).toBe(false);
        expect(await store.issuances.leaseUpload(a.credentialId, at(11), 1000)).toBe(true);
        // A leased upload is not due before its lease ends.
        expect(await store.issuances.nextUploadDue()).toEqual(at(20));
        await store.issuances.markUploadFailed(a.credentialId, 'upstream 503', at(5000), 10);
        expect(await store.issuances.get(a.credentialId)).toMatchObject({
          uploadState: 'pending',
          uploadAttempts: 1,
          lastError: 'upstream 503',
          nextAttemptAt: at(5000),
        });
        // The failure dropped the lease: it is due again at its backoff.
        expect(await store.issuances.leaseUpload(a.credentialId, at(11), 1000)).toBe(true);
        // Until the mark, the envelope is kept (to send again); from it, only its digest.
        expect((await store.issuances.get(a.credentialId))?.envelope).toEqual(a.envelope);
        await store.issuances.markUploaded(a.credentialId, '/vcs/a', at(6000));
        expect(await store.issuances.get(a.credentialId)).toMatchObject({
          uploadState: 'uploaded',
          uploadAttempts: 2,
          lastError: null,
          nextAttemptAt: null,
          storagePath: '/vcs/a',
          uploadedAt: at(6000),
          envelope: null,
          envelopeSha256: DATA_SHA256,
        });
        // A late failure report does not reopen an uploaded credential.
        await store.issuances.markUploadFailed(a.credentialId, 'late', at(9000), 10);
        expect((await store.issuances.get(a.credentialId))?.uploadState).toBe('uploaded');
        expect(await store.issuances.countPendingUploads()).toBe(1);
        await store.issuances.markUploaded(b.credentialId, null, at(7000));
        expect(await store.issuances.get(b.credentialId)).toMatchObject({
          storagePath: null,
          uploadState: 'uploaded',
        });
        expect(await store.issuances.countPendingUploads()).toBe(0);
        expect(await store.issuances.nextUploadDue()).toBeUndefined();
      });

      it('gives up after the last attempt (failed), and retryFailedUploads puts it back', async () => {
        const store = await open();
        const r = await insert(store, issuance());
        expect(await store.issuances.markUploadFailed(r.credentialId, 'e1', at(10), 2)).toEqual({
          attempts: 1,
          gaveUp: false,
        });
        expect(await store.issuances.markUploadFailed(r.credentialId, 'e2', at(20), 2)).toEqual({
          attempts: 2,
          gaveUp: true,
        });
        // A failed upload keeps its envelope: `uploads retry` sends it.
        expect(await store.issuances.get(r.credentialId)).toMatchObject({
          uploadState: 'failed',
          nextAttemptAt: null,
          envelope: r.envelope,
        });
        expect(await store.issuances.countFailedUploads()).toBe(1);
        expect(await store.issuances.countPendingUploads()).toBe(0);
        expect(await store.issuances.retryFailedUploads([r.credentialId], at(30))).toEqual([r.credentialId]);
        expect(await store.issuances.get(r.credentialId)).toMatchObject({
          uploadState: 'pending',
          uploadAttempts: 0,
          nextAttemptAt: at(30),
        });
        const [due] = await store.issuances.leaseDueUploads(at(30), 1000, 10);
        expect(due).toMatchObject({ credentialId: r.credentialId, envelope: r.envelope });
        expect(await store.issuances.retryFailedUploads('all', at(40))).toEqual([]);
      });

      it('makePendingDue makes every pending upload due now and frees expired leases', async () => {
        const store = await open();
        const backoff = await insert(store, issuance());
        await store.issuances.markUploadFailed(backoff.credentialId, 'upstream 503', at(3_600_000), 10);
        const leased = await insert(store, issuance());
        await store.issuances.leaseUpload(leased.credentialId, T0, 1000);
        const done = await insert(store, issuance());
        await store.issuances.markUploaded(done.credentialId, '/vcs/x', T0);
        await store.issuances.makePendingDue(at(5000));
        expect((await store.issuances.get(backoff.credentialId))?.nextAttemptAt).toEqual(at(5000));
        expect((await store.issuances.get(done.credentialId))?.nextAttemptAt).toBeNull();
        const taken = await store.issuances.leaseDueUploads(at(5000), 1000, 10);
        expect(taken.map((r) => r.credentialId).sort()).toEqual(
          [backoff.credentialId, leased.credentialId].sort(),
        );
      });
    });

    describe('status', () => {
      it('revoke, suspend and unsuspend move a credential between the token status list values', async () => {
        const store = await open();
        const r = await slotted(store);
        const nonce = r.revocationNonce;
        expect(await store.status.changeStatus(nonce, 'suspend', at(1))).toMatchObject({
          status: 2,
          suspendedAt: at(1),
        });
        // Suspending twice keeps the first time.
        expect(await store.status.changeStatus(nonce, 'suspend', at(2))).toMatchObject({
          status: 2,
          suspendedAt: at(1),
        });
        expect(await store.status.changeStatus(nonce, 'unsuspend', at(3))).toMatchObject({
          status: 0,
          suspendedAt: null,
        });
        await store.status.changeStatus(nonce, 'suspend', at(4));
        expect(await store.status.changeStatus(nonce, 'revoke', at(5))).toMatchObject({
          status: 1,
          revokedAt: at(5),
          suspendedAt: null,
        });
        // Revoked is final and keeps its first time.
        expect(await store.status.changeStatus(nonce, 'revoke', at(6))).toMatchObject({
          status: 1,
          revokedAt: at(5),
        });
        expect(await store.status.changeStatus(nonce, 'unsuspend', at(7))).toMatchObject({ status: 1 });
        expect(await store.status.changeStatus(nonce, 'suspend', at(8))).toMatchObject({ status: 1 });
        expect(await store.status.changeStatus(987_654_321, 'revoke', at(9))).toBeUndefined();
        // A partition number beyond any engine's column names no partition.
        expect(await store.status.getPartition(99_999_999_999)).toBeUndefined();
        expect(await store.status.snapshotPartition(99_999_999_999)).toBeUndefined();
        expect(await store.issuances.get(r.credentialId)).toMatchObject({ status: 1, revokedAt: at(5) });
      });

      it('a partition snapshot lists non-zero statuses and its token is cached until a change', async () => {
        const store = await open();
        const a = await slotted(store, {}, 64, 2);
        const b = await slotted(store, {}, 64, 2);
        await slotted(store, {}, 64, 2);
        const p = a.statusSlot!.partition;
        await store.status.changeStatus(a.revocationNonce, 'revoke', T0);
        await store.status.changeStatus(b.revocationNonce, 'suspend', T0);
        expect(await store.status.getPartition(99)).toBeUndefined();
        expect(await store.status.snapshotPartition(99)).toBeUndefined();
        const snap = (await store.status.snapshotPartition(p))!;
        expect(snap.record).toMatchObject({ partition: p, size: 64, bits: 2, allocated: 3 });
        expect([...snap.statuses].sort((x, y) => x.index - y.index)).toEqual(
          [
            { index: a.statusSlot!.index, status: 1 },
            { index: b.statusSlot!.index, status: 2 },
          ].sort((x, y) => x.index - y.index),
        );
        expect(await store.status.savePartitionToken(p, 'token-1', '"e1"', at(10), snap.ticket)).toBe(true);
        expect(await store.status.getPartition(p)).toMatchObject({
          token: 'token-1',
          etag: '"e1"',
          publishedAt: at(10),
        });
        // A ticket is good once.
        expect(await store.status.savePartitionToken(p, 'token-x', '"ex"', at(11), snap.ticket)).toBe(false);
        // A change drops the cached token.
        await store.status.changeStatus(b.revocationNonce, 'unsuspend', T0);
        expect(await store.status.getPartition(p)).toMatchObject({ token: null, etag: null });
      });

      it('a change or a newer snapshot voids a build in flight, and the build is never cached', async () => {
        const store = await open();
        const a = await slotted(store);
        const p = a.statusSlot!.partition;
        const stale = (await store.status.snapshotPartition(p))!;
        // While a build is in flight nothing is served from the cache.
        expect(await store.status.getPartition(p)).toMatchObject({ token: null, etag: null });
        await store.status.changeStatus(a.revocationNonce, 'revoke', T0);
        expect(await store.status.savePartitionToken(p, 'stale', '"s"', T0, stale.ticket)).toBe(false);
        const older = (await store.status.snapshotPartition(p))!;
        expect(older.statuses).toEqual([{ index: a.statusSlot!.index, status: 1 }]);
        const newer = (await store.status.snapshotPartition(p))!;
        expect(await store.status.savePartitionToken(p, 'older', '"o"', T0, older.ticket)).toBe(false);
        expect(await store.status.savePartitionToken(p, 'newer', '"n"', T0, newer.ticket)).toBe(true);
        expect((await store.status.getPartition(p))?.token).toBe('newer');
      });

      it('a change on a credential without a slot, or with nothing to change, leaves the cache alone', async () => {
        const store = await open();
        const slottedOne = await slotted(store);
        const p = slottedOne.statusSlot!.partition;
        const snap = (await store.status.snapshotPartition(p))!;
        const plain = await insert(store, issuance({ proofType: 'BJJ_SIG_2021' }));
        await store.status.changeStatus(plain.revocationNonce, 'revoke', T0);
        await store.status.changeStatus(slottedOne.revocationNonce, 'unsuspend', T0);
        expect(await store.status.savePartitionToken(p, 't', '"t"', T0, snap.ticket)).toBe(true);
      });
    });

    describe('claims', () => {
      it('upserts, reads back and counts claims records', async () => {
        const store = await open();
        expect(await store.claims.getClaims('u1', 'membership-v1')).toBeUndefined();
        const claims = { givenName: 'Ada', nested: { z: 1, a: [1, 'two'] }, tier: 'gold' };
        expect(
          await store.claims.upsertClaims([
            { userId: 'u1', schemaId: 'membership-v1', claims, expiresAt: null },
            { userId: 'u2', schemaId: 'membership-v1', claims: { givenName: 'Bob' }, expiresAt: at(1000) },
            { userId: 'u2', schemaId: 'membership-v1', claims: { givenName: 'Bo' }, expiresAt: at(2000) },
          ]),
        ).toBe(3);
        const one = await store.claims.getClaims('u1', 'membership-v1');
        expect(one).toEqual({ userId: 'u1', schemaId: 'membership-v1', claims, expiresAt: null });
        // Key order as written (a claims source may be hashed or shown as is).
        expect(Object.keys(one!.claims.nested as object)).toEqual(['z', 'a']);
        // Within one call the last record for a user and schema wins.
        expect(await store.claims.getClaims('u2', 'membership-v1')).toMatchObject({
          claims: { givenName: 'Bo' },
          expiresAt: at(2000),
        });
        await store.claims.upsertClaims([
          { userId: 'u1', schemaId: 'membership-v1', claims: { givenName: 'Ada L.' }, expiresAt: at(5) },
          { userId: 'u1', schemaId: 'other', claims: { x: 1 }, expiresAt: null },
        ]);
        expect(await store.claims.getClaims('u1', 'membership-v1')).toMatchObject({
          claims: { givenName: 'Ada L.' },
          expiresAt: at(5),
        });
        expect(await store.claims.countClaims()).toBe(3);
      });

      it('upserts a large import in one call', async () => {
        const store = await open();
        const records = Array.from({ length: 2500 }, (_, i) => ({
          userId: `bulk-${i}`,
          schemaId: 'membership-v1',
          claims: { n: i },
          expiresAt: null,
        }));
        expect(await store.claims.upsertClaims(records)).toBe(2500);
        expect(await store.claims.countClaims()).toBe(2500);
        expect((await store.claims.getClaims('bulk-2499', 'membership-v1'))?.claims).toEqual({ n: 2499 });
      });
    });

    describe('history', () => {
      async function seed(store: Store) {
        const valid = await slotted(store, { createdAt: at(1000) });
        const revoked = await slotted(store, { createdAt: at(2000), holderDid: 'did:example:other' });
        await store.status.changeStatus(revoked.revocationNonce, 'revoke', at(2500));
        const suspended = await slotted(store, { createdAt: at(3000) });
        await store.status.changeStatus(suspended.revocationNonce, 'suspend', at(3500));
        const expired = await slotted(store, { createdAt: at(4000), expiresAt: at(5000) });
        const bjj = await insert(
          store,
          issuance({ createdAt: at(5000), proofType: 'BJJ_SIG_2021', schemaId: 'kyc-v1' }),
        );
        await store.issuances.markUploaded(valid.credentialId, '/vcs/v', at(1100));
        await store.issuances.markUploaded(revoked.credentialId, '/vcs/r', at(2100));
        await store.issuances.markUploaded(suspended.credentialId, '/vcs/s', at(3100));
        await store.issuances.markUploaded(expired.credentialId, '/vcs/e', at(4100));
        return { valid, revoked, suspended, expired, bjj };
      }
      const base = { page: 1, limit: 50, order: 'createdAt_desc' as const, now: at(10_000), total: true };

      it('filters by holder, schema, nonce, proof type and derived status', async () => {
        const store = await open();
        const s = await seed(store);
        const ids = async (q: Partial<Parameters<Store['history']['list']>[0]>) =>
          (await store.history.list({ ...base, ...q })).records.map((r) => r.credentialId);
        expect(await ids({})).toEqual(
          [s.bjj, s.expired, s.suspended, s.revoked, s.valid].map((r) => r.credentialId),
        );
        expect(await ids({ status: 'valid' })).toEqual([s.bjj.credentialId, s.valid.credentialId]);
        expect(await ids({ status: 'revoked' })).toEqual([s.revoked.credentialId]);
        expect(await ids({ status: 'suspended' })).toEqual([s.suspended.credentialId]);
        expect(await ids({ status: 'expired' })).toEqual([s.expired.credentialId]);
        expect(await ids({ status: 'upload_pending' })).toEqual([s.bjj.credentialId]);
        expect(await ids({ holderDid: 'did:example:other' })).toEqual([s.revoked.credentialId]);
        expect(await ids({ schemaId: 'kyc-v1' })).toEqual([s.bjj.credentialId]);
        expect(await ids({ proofType: 'BJJ_SIG_2021' })).toEqual([s.bjj.credentialId]);
        expect(await ids({ revocationNonce: s.suspended.revocationNonce })).toEqual([
          s.suspended.credentialId,
        ]);
        expect(
          await ids({ holderDid: 'did:example:holder', status: 'valid', proofType: 'SD_JWT_VC' }),
        ).toEqual([s.valid.credentialId]);
        // Revoked wins over expired: a revoked credential past its expiry is still "revoked".
        expect(await ids({ status: 'revoked', now: at(2 * YEAR) })).toEqual([s.revoked.credentialId]);
        expect(await ids({ status: 'expired', now: at(2 * YEAR) })).toHaveLength(4);
      });

      it('summaries carry metadata only, and pages are stable when creation times tie', async () => {
        const store = await open();
        const s = await seed(store);
        const { records, total } = await store.history.list({
          ...base,
          revocationNonce: s.revoked.revocationNonce,
        });
        expect(total).toBe(1);
        expect(records[0]).toEqual({
          credentialId: s.revoked.credentialId,
          channel: 'hosted',
          holderDid: 'did:example:other',
          schemaId: 'membership-v1',
          proofType: 'SD_JWT_VC',
          revocationNonce: s.revoked.revocationNonce,
          statusSlot: s.revoked.statusSlot,
          kid: 'kid-1',
          createdAt: at(2000),
          expiresAt: at(YEAR),
          status: 1,
          revokedAt: at(2500),
          uploadState: 'uploaded',
          storagePath: '/vcs/r',
        });
        const tied = [];
        for (let i = 0; i < 7; i++)
          tied.push((await insert(store, issuance({ createdAt: at(9000), schemaId: 'tie' }))).credentialId);
        for (const order of ['createdAt_asc', 'createdAt_desc'] as const) {
          const seen: string[] = [];
          for (let page = 1; page <= 3; page++) {
            const res = await store.history.list({ ...base, schemaId: 'tie', order, page, limit: 3 });
            expect(res.total).toBe(7);
            seen.push(...res.records.map((r) => r.credentialId));
          }
          expect(seen).toEqual(order === 'createdAt_asc' ? tied : [...tied].reverse());
        }
      });

      it('filters by email hash: only the direct issuances recorded with it, with or without a slot', async () => {
        const store = await open();
        const s = await seed(store);
        const direct = (emailHash: string, ms: number): Partial<NewIssuance> => ({
          channel: 'direct',
          holderDid: `did:example:${emailHash}`,
          emailHash,
          createdAt: at(ms),
        });
        const a1 = await slotted(store, direct('hash-a', 6000));
        const a2 = await insert(store, issuance(direct('hash-a', 7000)));
        const b = await insert(store, issuance(direct('hash-b', 8000)));
        await store.status.changeStatus(a1.revocationNonce, 'revoke', at(9000));
        // The hash is written, never read back: the inserted record equals what `get` reads.
        expect(a2).toEqual(await store.issuances.get(a2.credentialId));
        expect(a2).not.toHaveProperty('emailHash');
        const page = async (q: Partial<Parameters<Store['history']['list']>[0]>) =>
          store.history.list({ ...base, ...q });
        const a = await page({ emailHash: 'hash-a' });
        expect(a.records.map((r) => r.credentialId)).toEqual([a2.credentialId, a1.credentialId]);
        expect(a.total).toBe(2);
        expect((await page({ emailHash: 'hash-b' })).records.map((r) => r.credentialId)).toEqual([
          b.credentialId,
        ]);
        expect(
          (await page({ emailHash: 'hash-a', status: 'revoked' })).records.map((r) => r.credentialId),
        ).toEqual([a1.credentialId]);
        expect(await page({ emailHash: 'hash-unknown' })).toEqual({ records: [], next: null, total: 0 });
        // Issuances recorded without a hash (hosted; seeded above) never match a filter.
        expect((await page({})).total).toBe(Object.keys(s).length + 3);
      });

      // docs/interface.md "Paging": keyset pages by (createdAt, insertion order).
      const keyset = { limit: 3, order: 'createdAt_desc' as const, now: at(10_000) };
      type Q = Partial<Parameters<Store['history']['list']>[0]>;
      async function walk(store: Store, q: Q, between?: (n: number) => Promise<void>) {
        const seen: string[] = [];
        let after: Parameters<Store['history']['list']>[0]['after'];
        for (let n = 0; ; n++) {
          const res = await store.history.list({ ...keyset, ...q, after });
          expect(res.records.length).toBeLessThanOrEqual(q.limit ?? keyset.limit);
          expect(res.total).toBeUndefined();
          seen.push(...res.records.map((r) => r.credentialId));
          if (!res.next) return seen;
          after = res.next;
          await between?.(n);
        }
      }

      it('keyset pages: every row once in both orders, ties and concurrent inserts included', async () => {
        const store = await open();
        const s = await seed(store);
        const tied: string[] = [];
        for (let i = 0; i < 7; i++)
          tied.push((await insert(store, issuance({ createdAt: at(4000) }))).credentialId);
        const desc = [
          s.bjj,
          ...[...tied].reverse().map((credentialId) => ({ credentialId })),
          s.expired,
          s.suspended,
          s.revoked,
          s.valid,
        ].map((r) => r.credentialId);
        expect(await walk(store, {})).toEqual(desc);
        expect(await walk(store, { order: 'createdAt_asc', limit: 4 })).toEqual([...desc].reverse());
        // Rows recorded while walking newest first sort before the cursor: never seen, nothing shifts.
        const during = await walk(store, {}, async (n) => {
          await insert(store, issuance({ createdAt: at(9000 + n) }));
          await insert(store, issuance({ createdAt: at(4000) }));
        });
        expect(during).toEqual(desc);
        // Filters combine with the cursor: the same rows as one OFFSET page of them all.
        const combos: Q[] = [
          { schemaId: 'membership-v1', status: 'valid' },
          { status: 'revoked' },
          { status: 'upload_pending', proofType: 'SD_JWT_VC' },
          { holderDid: 'did:example:holder', proofType: 'SD_JWT_VC' },
          { holderDid: 'did:example:holder', status: 'suspended', order: 'createdAt_asc' },
        ];
        for (const q of combos) {
          const all = await store.history.list({ ...base, ...q, limit: 100 });
          expect(all.records.length).toBeGreaterThan(0);
          expect(await walk(store, { ...q, limit: 2 })).toEqual(all.records.map((r) => r.credentialId));
        }
      });

      it('a keyset read stops after a bounded number of rows: short pages, still every match once', async () => {
        const store = await open();
        const rare: string[] = [];
        // Enough rows that a filter checked row by row cannot fill its page in one bounded read;
        // recorded 100 at a time, as concurrent issuances are (one group commit each).
        for (let first = 0; first < SCAN_LIMIT + 700; first += 100) {
          const made = await Promise.all(
            Array.from({ length: Math.min(100, SCAN_LIMIT + 700 - first) }, (_, k) => {
              const i = first + k;
              return insert(
                store,
                issuance({ createdAt: at(i), expiresAt: i % 900 === 0 ? at(YEAR) : at(i + 1) }),
              );
            }),
          );
          made.forEach((r, k) => {
            if ((first + k) % 900 === 0) rare.push(r.credentialId);
          });
        }
        const pages: number[] = [];
        let after: Parameters<Store['history']['list']>[0]['after'];
        const seen: string[] = [];
        do {
          const res = await store.history.list({
            ...keyset,
            status: 'valid',
            limit: 100,
            now: at(SCAN_LIMIT + 800),
            after,
          });
          pages.push(res.records.length);
          seen.push(...res.records.map((r) => r.credentialId));
          after = res.next ?? undefined;
        } while (after);
        expect(seen).toEqual([...rare].reverse());
        expect(pages.length).toBeGreaterThan(1);
        const total = await store.history.list({
          ...keyset,
          status: 'valid',
          now: at(SCAN_LIMIT + 800),
          total: true,
        });
        expect(total.total).toBe(rare.length);
      });

      it('status=suspended: suspended and unexpired, every page alike; a suspended one past its expiry is expired', async () => {
        const store = await open();
        const live: string[] = [];
        const lapsed: string[] = [];
        for (let i = 0; i < 24; i++) {
          // Three an instant, so that pages cut through ties; every other instant has expired by `now`.
          const instant = Math.floor(i / 3);
          const expired = instant % 2 === 0;
          const createdAt = at(1000 * instant);
          const r = await slotted(store, { createdAt, expiresAt: expired ? at(9000) : at(YEAR) });
          await store.status.changeStatus(r.revocationNonce, 'suspend', at(20_000));
          (expired ? lapsed : live).push(r.credentialId);
          await slotted(store, { createdAt, expiresAt: at(YEAR) });
        }
        const now = at(10_000);
        for (const limit of [2, 3, 5]) {
          expect(await walk(store, { status: 'suspended', now, limit })).toEqual([...live].reverse());
          expect(await walk(store, { status: 'suspended', now, limit, order: 'createdAt_asc' })).toEqual(
            live,
          );
          expect(await walk(store, { status: 'expired', now, limit })).toEqual([...lapsed].reverse());
        }
        const offset = await store.history.list({ ...base, status: 'suspended', now });
        expect(offset.records.map((r) => r.credentialId)).toEqual([...live].reverse());
        expect(offset.total).toBe(live.length);
        const second = await store.history.list({ ...base, status: 'suspended', now, page: 2, limit: 5 });
        expect(second.records.map((r) => r.credentialId)).toEqual([...live].reverse().slice(5, 10));
        // Past every expiry, nothing is suspended.
        expect((await store.history.list({ ...base, status: 'suspended', now: at(2 * YEAR) })).total).toBe(0);
      });

      it('activeFor lists the holder credentials of a schema and proof type that are valid or suspended, newest first', async () => {
        const store = await open();
        const s = await seed(store);
        const active = await store.history.activeFor(
          'did:example:holder',
          'membership-v1',
          'SD_JWT_VC',
          at(10_000),
        );
        expect(active.map((r) => r.credentialId)).toEqual([s.suspended.credentialId, s.valid.credentialId]);
        expect(
          await store.history.activeFor('did:example:holder', 'kyc-v1', 'SD_JWT_VC', at(10_000)),
        ).toEqual([]);
        expect(
          await store.history.activeFor('did:example:holder', 'membership-v1', 'SD_JWT_VC', at(2 * YEAR)),
        ).toEqual([]);
        // Only the proof type asked for is read: the holder's BJJ credential of kyc-v1.
        const bjj = await store.history.activeFor('did:example:holder', 'kyc-v1', 'BJJ_SIG_2021', at(10_000));
        expect(bjj.map((r) => r.credentialId)).toEqual([s.bjj.credentialId]);
      });
    });

    describe('iden3', () => {
      const bytes = (fill: number, length = 32) => new Uint8Array(length).fill(fill);
      const writes = (tree: Iden3TreeName, fill: number): Iden3TreeWrites => ({
        nodes: [{ tree, key: bytes(fill), node: { type: 1, data: bytes(fill + 1, 64) } }],
        roots: [{ tree, root: bytes(fill) }],
      });
      const state = (
        name: string,
        change: NewIden3State['change'],
        nonce: bigint | null = null,
      ): NewIden3State => ({
        state: `state-${name}`,
        claimsTreeRoot: `claims-${name}`,
        revocationTreeRoot: `revocation-${name}`,
        rootOfRoots: `roots-${name}`,
        change,
        revocationNonce: nonce,
        createdAt: at(name.length).toISOString(),
      });
      const identity = {
        did: 'did:iden3:privado:test:x',
        publicKey: 'ab'.repeat(32),
        authClaim: 'cd'.repeat(64),
      };
      async function genesis(store: Store) {
        const created = await store.iden3.createIden3Identity({
          ...writes('claims', 1),
          identity,
          state: state('genesis', 'genesis'),
        });
        expect(created).toBe(true);
        return (await store.iden3.latestState())!;
      }

      it('starts empty; genesis records the trees, the identity and the first state once', async () => {
        const store = await open();
        expect(await store.iden3.getIdentity()).toBeUndefined();
        expect(await store.iden3.latestState()).toBeUndefined();
        expect(await store.iden3.genesisState()).toBeUndefined();
        expect(await store.iden3.getRoot('claims')).toBeUndefined();
        expect(await store.iden3.getNode('claims', bytes(1))).toBeUndefined();
        const first = await genesis(store);
        expect(first).toEqual({
          seq: first.seq,
          state: 'state-genesis',
          claimsTreeRoot: 'claims-genesis',
          revocationTreeRoot: 'revocation-genesis',
          rootOfRoots: 'roots-genesis',
          createdAt: at(7).toISOString(),
        });
        expect(await store.iden3.genesisState()).toEqual(first);
        expect(await store.iden3.findState('state-genesis')).toEqual(first);
        expect(await store.iden3.findState('state-other')).toBeUndefined();
        expect(await store.iden3.getIdentity()).toEqual(identity);
        expect(Buffer.from((await store.iden3.getRoot('claims'))!)).toEqual(Buffer.from(bytes(1)));
        const node = await store.iden3.getNode('claims', bytes(1));
        expect({ type: node!.type, data: Buffer.from(node!.data) }).toEqual({
          type: 1,
          data: Buffer.from(bytes(2, 64)),
        });
        // The same node key in another tree is another node.
        expect(await store.iden3.getNode('revocation', bytes(1))).toBeUndefined();
        // A second genesis (another instance starting at the same moment) writes nothing.
        expect(
          await store.iden3.createIden3Identity({
            ...writes('claims', 9),
            identity,
            state: state('other', 'genesis'),
          }),
        ).toBe(false);
        expect(Buffer.from((await store.iden3.getRoot('claims'))!)).toEqual(Buffer.from(bytes(1)));
        expect(await store.iden3.findState('state-other')).toBeUndefined();
      });

      it('commits a state on the latest base with its revocation; a stale base writes nothing', async () => {
        const store = await open();
        const base = await genesis(store);
        const r = await slotted(store, { proofType: 'BJJ_SIG_2021' });
        const snapshot = await store.status.snapshotPartition(r.statusSlot!.partition);
        const change = { nonce: r.revocationNonce, change: 'revoke' as const, at: at(50) };
        const done = await store.iden3.commitIden3State({
          ...writes('revocation', 3),
          baseSeq: base.seq,
          state: state('one', 'revocation', BigInt(r.revocationNonce)),
          statusChange: change,
        });
        expect(done.committed).toBe(true);
        expect(done.record).toMatchObject({ credentialId: r.credentialId, status: 1, revokedAt: at(50) });
        const latest = (await store.iden3.latestState())!;
        expect(latest.seq).toBeGreaterThan(base.seq);
        expect(latest.state).toBe('state-one');
        expect(Buffer.from((await store.iden3.getRoot('revocation'))!)).toEqual(Buffer.from(bytes(3)));
        // The revocation voided a status list build in flight, as a plain status change does.
        expect(
          await store.status.savePartitionToken(r.statusSlot!.partition, 't', 'e', at(60), snapshot!.ticket),
        ).toBe(false);

        // Computed from genesis after 'one' committed: nothing of it is written.
        const other = await slotted(store);
        const stale = await store.iden3.commitIden3State({
          ...writes('revocation', 5),
          baseSeq: base.seq,
          state: state('two', 'revocation'),
          statusChange: { nonce: other.revocationNonce, change: 'revoke', at: at(70) },
        });
        expect(stale).toEqual({ committed: false });
        expect((await store.iden3.latestState())!.state).toBe('state-one');
        expect(await store.iden3.findState('state-two')).toBeUndefined();
        expect(await store.iden3.getNode('revocation', bytes(5))).toBeUndefined();
        expect(Buffer.from((await store.iden3.getRoot('revocation'))!)).toEqual(Buffer.from(bytes(3)));
        expect((await store.issuances.get(other.credentialId))!.status).toBe(0);
        // Without a status change, on the latest base, it commits.
        expect(
          await store.iden3.commitIden3State({
            ...writes('revocation', 5),
            baseSeq: latest.seq,
            state: state('two', 'revocation'),
          }),
        ).toEqual({ committed: true, record: undefined });
      });

      it('concurrent commits on one base: exactly one commits, and the history stays a chain', async () => {
        const store = await open();
        const base = await genesis(store);
        const outcomes = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            store.iden3.commitIden3State({
              ...writes('revocation', 10 + i),
              baseSeq: base.seq,
              state: state(`race-${i}`, 'revocation'),
            }),
          ),
        );
        expect(outcomes.filter((o) => o.committed)).toHaveLength(1);
        const winner = outcomes.findIndex((o) => o.committed);
        expect((await store.iden3.latestState())!.state).toBe(`state-race-${winner}`);
        for (let i = 0; i < 6; i++)
          expect(await store.iden3.findState(`state-race-${i}`)).toEqual(
            i === winner ? expect.objectContaining({ state: `state-race-${i}` }) : undefined,
          );
      });
    });

    describe('audit and meta', () => {
      it('audit rows commit with the issue, a status change that changed something and a claims import', async () => {
        const store = await open();
        const actor = { actor: 'ops', reason: 'ticket 7' };
        const r = await slotted(store);
        await store.issuances.insertIssuance(issuance(), { dedupe: false, audit: actor });
        await store.status.changeStatus(r.revocationNonce, 'revoke', at(10), actor);
        // Nothing changed: no row.
        await store.status.changeStatus(r.revocationNonce, 'revoke', at(11), actor);
        await store.claims.upsertClaims(
          [{ userId: 'u', schemaId: 'membership-v1', claims: { a: 1 }, expiresAt: null }],
          { actor: 'importer' },
        );
        await store.audit.record({ at: at(20), actor: 'ops', action: 'keys.rotate', target: 'kid-2' });
        const all = await store.audit.list({ page: 1, limit: 10, total: true });
        expect(all.total).toBe(4);
        expect(all.records.map((e) => [e.actor, e.action])).toEqual([
          ['ops', 'keys.rotate'],
          ['importer', 'claims.import'],
          ['ops', 'revoke'],
          ['ops', 'issue'],
        ]);
        expect(all.records[2]).toEqual({
          at: at(10),
          actor: 'ops',
          action: 'revoke',
          target: String(r.revocationNonce),
          reason: 'ticket 7',
        });
        const byActor = await store.audit.list({
          page: 1,
          limit: 1,
          actor: 'ops',
          action: 'issue',
          total: true,
        });
        expect(byActor.total).toBe(1);
      });

      it('audit keyset pages: newest first, filters combined, every entry once', async () => {
        const store = await open();
        for (let i = 0; i < 9; i++) {
          await store.audit.record({
            at: at(i),
            actor: i % 2 ? 'ops' : 'dev',
            action: i % 3 ? 'revoke' : 'issue',
            target: `t${i}`,
          });
        }
        const walkAudit = async (q: { actor?: string; action?: 'issue' | 'revoke' }) => {
          const seen: string[] = [];
          let after: number | undefined;
          do {
            const res = await store.audit.list({ limit: 2, ...q, after });
            seen.push(...res.records.map((e) => e.target));
            after = res.next ?? undefined;
          } while (after !== undefined);
          return seen;
        };
        expect(await walkAudit({})).toEqual(['t8', 't7', 't6', 't5', 't4', 't3', 't2', 't1', 't0']);
        expect(await walkAudit({ actor: 'ops', action: 'revoke' })).toEqual(['t7', 't5', 't1']);
        expect(await walkAudit({ action: 'issue' })).toEqual(['t6', 't3', 't0']);
      });

      it('meta keeps the first value written', async () => {
        const store = await open();
        expect(await store.meta.get('environment')).toBeUndefined();
        expect(await store.meta.setIfAbsent('environment', 'test')).toBe('test');
        expect(await store.meta.setIfAbsent('environment', 'production')).toBe('test');
        expect(await store.meta.get('environment')).toBe('test');
      });
    });

    describe('console', () => {
      const limits = { idleMs: 1800_000, absoluteMs: 8 * 3600_000 };

      it('sessions: a request moves the last use; idle or too old, a session has ended and is removed', async () => {
        const store = await open();
        await store.consoleSessions.create('h1', 'ops-alice', 'k-ops-alice', at(0));
        await store.consoleSessions.create('h2', 'ops-bob', 'k-ops-bob', at(0));
        expect(await store.consoleSessions.use('h1', at(1000_000), limits)).toEqual({
          actor: 'ops-alice',
          keyHash: 'k-ops-alice',
          createdAt: at(0),
          lastSeenAt: at(1000_000),
        });
        // h1 was used at 1000 s: still live at 2700 s; h2, unused since 0, has been idle too long.
        expect((await store.consoleSessions.use('h1', at(2700_000), limits))?.actor).toBe('ops-alice');
        expect(await store.consoleSessions.use('h2', at(2700_000), limits)).toBeUndefined();
        expect(await store.consoleSessions.use('h2', at(0), limits)).toBeUndefined();
        // However active, a session ends 8 hours after its sign-in.
        let t = 2700_000;
        while (t + 1000_000 < limits.absoluteMs) {
          t += 1000_000;
          expect(await store.consoleSessions.use('h1', at(t), limits)).toBeDefined();
        }
        expect(await store.consoleSessions.use('h1', at(limits.absoluteMs), limits)).toBeUndefined();
        expect(await store.consoleSessions.use('unknown', at(0), limits)).toBeUndefined();

        await store.consoleSessions.create('h3', 'a', 'k-a', at(0));
        await store.consoleSessions.create('h4', 'b', 'k-b', at(5000_000));
        expect(await store.consoleSessions.end('h4')).toBe(true);
        expect(await store.consoleSessions.end('h4')).toBe(false);
        expect(await store.consoleSessions.use('h4', at(5000_001), limits)).toBeUndefined();
        await store.consoleSessions.create('h5', 'c', 'k-c', at(5000_000));
        expect(await store.consoleSessions.list(at(5000_000), limits)).toEqual([
          { idHash: 'h5', actor: 'c', keyHash: 'k-c', createdAt: at(5000_000), lastSeenAt: at(5000_000) },
        ]);
        expect(await store.consoleSessions.endExpired(at(5000_000), limits)).toBe(1);
        expect((await store.consoleSessions.use('h5', at(5000_001), limits))?.actor).toBe('c');
      });

      it('issuances per hour by channel and proof type, from a time on', async () => {
        const store = await open();
        const h = 3600_000;
        await insert(store, issuance({ createdAt: at(-1) }));
        await insert(store, issuance({ createdAt: at(0) }));
        await insert(store, issuance({ createdAt: at(h - 1) }));
        await insert(store, issuance({ createdAt: at(h), channel: 'direct' }));
        await insert(store, issuance({ createdAt: at(h + 5), proofType: 'BJJ_SIG_2021' }));
        expect(await store.history.issuancesPerHour(at(0))).toEqual([
          { hour: '2030-01-01T00', channel: 'hosted', proofType: 'SD_JWT_VC', count: 2 },
          { hour: '2030-01-01T01', channel: 'direct', proofType: 'SD_JWT_VC', count: 1 },
          { hour: '2030-01-01T01', channel: 'hosted', proofType: 'BJJ_SIG_2021', count: 1 },
        ]);
      });

      it('an audit trail by targets, newest first', async () => {
        const store = await open();
        for (const [i, target] of ['cred-1', '42', 'cred-2', 'cred-1'].entries())
          await store.audit.record({ at: at(i), actor: 'ops', action: 'issue', target, reason: `r${i}` });
        expect((await store.audit.trail(['cred-1', '42'], 10)).map((e) => [e.target, e.reason])).toEqual([
          ['cred-1', 'r3'],
          ['42', 'r1'],
          ['cred-1', 'r0'],
        ]);
        expect(await store.audit.trail([], 10)).toEqual([]);
      });

      it('history filters by channel and creation dates, keyset and OFFSET alike', async () => {
        const store = await open();
        const rows: Array<Awaited<ReturnType<typeof insert>>> = [];
        for (let i = 0; i < 6; i++)
          rows.push(
            await insert(store, issuance({ createdAt: at(i * 1000), channel: i % 2 ? 'direct' : 'hosted' })),
          );
        const ids = async (q: Partial<Parameters<Store['history']['list']>[0]>) => {
          const seen: string[] = [];
          let after: Parameters<Store['history']['list']>[0]['after'];
          do {
            const page = await store.history.list({
              limit: 2,
              order: 'createdAt_desc',
              now: at(0),
              after,
              ...q,
            });
            seen.push(...page.records.map((r) => r.credentialId));
            after = page.next ?? undefined;
          } while (after);
          const offset = await store.history.list({
            page: 1,
            limit: 50,
            order: 'createdAt_desc',
            now: at(0),
            ...q,
          });
          expect(offset.records.map((r) => r.credentialId)).toEqual(seen);
          return seen;
        };
        const id = (i: number) => rows[i]!.credentialId;
        expect(await ids({ channel: 'direct' })).toEqual([id(5), id(3), id(1)]);
        expect(await ids({ createdFrom: at(2000), createdTo: at(4000) })).toEqual([id(3), id(2)]);
        expect(await ids({ createdFrom: at(4000) })).toEqual([id(5), id(4)]);
        expect(await ids({ channel: 'hosted', createdTo: at(3000) })).toEqual([id(2), id(0)]);
        expect(
          await ids({ holderDid: 'did:example:holder', createdFrom: at(1000), channel: 'direct' }),
        ).toEqual([id(5), id(3), id(1)]);
      });

      it('audit filters by date', async () => {
        const store = await open();
        for (let i = 0; i < 5; i++)
          await store.audit.record({ at: at(i * 1000), actor: 'ops', action: 'revoke', target: `t${i}` });
        const list = async (q: { from?: Date; to?: Date; actor?: string }) =>
          (await store.audit.list({ limit: 10, ...q })).records.map((e) => e.target);
        expect(await list({ from: at(1000), to: at(3000) })).toEqual(['t2', 't1']);
        expect(await list({ from: at(3000), actor: 'ops' })).toEqual(['t4', 't3']);
      });

      it("a credential's webhook deliveries are found through the events that name it", async () => {
        const store = await open();
        await store.webhooks.addEndpoint({
          id: 'ep_1',
          url: 'https://hooks.example/a',
          events: ['*'],
          description: null,
          secret: 'whsec_x',
          createdAt: at(0),
        });
        const event = (credentialId: string) => ({
          id: `evt_${randomUUID()}`,
          type: 'credential.issued' as const,
          data: JSON.stringify({ credentialId }),
        });
        const a = issuance();
        const b = issuance();
        await insert(store, { ...a, event: event(a.credentialId) });
        await insert(store, { ...b, event: event(b.credentialId) });
        await store.webhooks.recordEvent({ id: 'evt_k', type: 'key.rotated', data: '{"kid":"k"}' }, at(1));
        while ((await store.webhooks.fanOut(at(2), () => `msg_${randomUUID()}`, 10)) > 0);
        const found = await store.webhooks.listCredentialDeliveries(a.credentialId, 10);
        expect(found.map((d) => [d.endpointId, d.type, JSON.parse(d.data).credentialId])).toEqual([
          ['ep_1', 'credential.issued', a.credentialId],
        ]);
        expect(await store.webhooks.listCredentialDeliveries('nobody', 10)).toEqual([]);
      });
      it('leasing fans waiting events out: each delivery goes to one caller until its lease has passed', async () => {
        const store = await open();
        const endpoint = (id: string, events: string[]) =>
          store.webhooks.addEndpoint({
            id,
            url: `https://hooks.example/${id}`,
            events,
            description: null,
            secret: 'whsec_x',
            createdAt: at(0),
          });
        await endpoint('ep_1', ['*']);
        await endpoint('ep_2', ['credential.revoked']);
        await store.webhooks.recordEvent({ id: 'evt_a', type: 'key.rotated', data: '{"kid":"k"}' }, at(0));
        await store.webhooks.recordEvent(
          { id: 'evt_b', type: 'credential.revoked', data: '{"credentialId":"c"}' },
          at(0),
        );
        const first = await store.webhooks.leaseDueDeliveries(at(1), 60_000, 10);
        expect(first.map((d) => `${d.endpointId} ${d.type} ${d.eventId}`).sort()).toEqual([
          'ep_1 credential.revoked evt_b',
          'ep_1 key.rotated evt_a',
          'ep_2 credential.revoked evt_b',
        ]);
        expect(await store.webhooks.leaseDueDeliveries(at(2), 60_000, 10)).toEqual([]);
        const again = await store.webhooks.leaseDueDeliveries(at(60_002), 60_000, 10);
        expect(again.map((d) => d.id).sort()).toEqual(first.map((d) => d.id).sort());
        await store.webhooks.markDelivered(
          again.map((d) => ({ id: d.id, status: 204 })),
          at(60_003),
        );
        expect(await store.webhooks.leaseDueDeliveries(at(200_000), 60_000, 10)).toEqual([]);
      });
    });

    describe('idempotency', () => {
      it('begin, complete, replay, mismatch, release and stale takeover', async () => {
        const store = await open();
        const idem = store.idempotency;
        expect(await idem.begin('admin', 'k1', 'h1', T0, 60_000)).toEqual({ kind: 'started' });
        expect(await idem.begin('admin', 'k1', 'h1', at(1000), 60_000)).toEqual({ kind: 'in-progress' });
        expect(await idem.begin('admin', 'k1', 'h2', at(1000), 60_000)).toEqual({ kind: 'mismatch' });
        // Another scope is another key.
        expect(await idem.begin('other', 'k1', 'h2', at(1000), 60_000)).toEqual({ kind: 'started' });
        await idem.complete('admin', 'k1', 201, { credentialId: 'c1', nested: [1, 2] });
        expect(await idem.begin('admin', 'k1', 'h1', at(2000), 60_000)).toEqual({
          kind: 'replay',
          status: 201,
          body: { credentialId: 'c1', nested: [1, 2] },
        });
        // A finished key is not released.
        await idem.release('admin', 'k1');
        expect((await idem.begin('admin', 'k1', 'h1', at(3000), 60_000)).kind).toBe('replay');
        // An unfinished one is: the retry runs again.
        await idem.begin('admin', 'k2', 'h', T0, 60_000);
        await idem.release('admin', 'k2');
        expect(await idem.begin('admin', 'k2', 'h', at(10), 60_000)).toEqual({ kind: 'started' });
        // A claim older than staleMs is taken over once.
        expect(await idem.begin('admin', 'k2', 'h', at(70_011), 60_000)).toEqual({ kind: 'started' });
        expect(await idem.begin('admin', 'k2', 'h', at(70_012), 60_000)).toEqual({ kind: 'in-progress' });
        await idem.complete('admin', 'k3', 200, undefined);
        expect(await idem.begin('admin', 'k3', 'h', T0, 60_000)).toEqual({ kind: 'started' });
        await idem.complete('admin', 'k3', 204, undefined);
        expect(await idem.begin('admin', 'k3', 'h', T0, 60_000)).toEqual({
          kind: 'replay',
          status: 204,
          body: null,
        });
      });

      it('concurrent requests with one key: exactly one starts', async () => {
        const store = await open();
        const outcomes = await Promise.all(
          Array.from({ length: 8 }, () => store.idempotency.begin('admin', 'race', 'h', T0, 60_000)),
        );
        expect(outcomes.filter((o) => o.kind === 'started')).toHaveLength(1);
        expect(outcomes.filter((o) => o.kind === 'in-progress')).toHaveLength(7);
      });

      it('prune drops keys created before a time', async () => {
        const store = await open();
        await store.idempotency.begin('admin', 'old', 'h', T0, 60_000);
        await store.idempotency.begin('admin', 'new', 'h', at(5000), 60_000);
        expect(await store.idempotency.prune(at(1000))).toBe(1);
        expect(await store.idempotency.begin('admin', 'old', 'other', at(6000), 60_000)).toEqual({
          kind: 'started',
        });
        expect(await store.idempotency.begin('admin', 'new', 'other', at(6000), 60_000)).toEqual({
          kind: 'mismatch',
        });
        expect(await store.idempotency.prune(at(1000))).toBe(0);
      });
    });

    describe('oid4vci', () => {
      const offer = (extra: Record<string, unknown> = {}) => ({
        offerHash: randomUUID(),
        codeHash: randomUUID(),
        schemaId: 'membership-v1',
        configurationId: 'membership-v1',
        userId: 'u1',
        emailHash: null,
        claims: { givenName: 'Ada', nested: { a: [1, 2] } },
        txCodeHash: 'tx',
        expiresAt: at(60_000),
        createdBy: 'admin',
        createdAt: T0,
        ...extra,
      });

      it('an oid4vci issuance has nothing to upload: upload state none, never in the outbox', async () => {
        const store = await open();
        const r = await insert(
          store,
          issuance({ channel: 'oid4vci', envelope: null, uploadDueAt: undefined }),
        );
        expect(r).toMatchObject({
          channel: 'oid4vci',
          uploadState: 'none',
          nextAttemptAt: null,
          envelope: null,
          envelopeSha256: null,
        });
        expect(await store.issuances.get(r.credentialId)).toMatchObject({
          uploadState: 'none',
          envelope: null,
          envelopeSha256: null,
        });
        expect(await store.issuances.leaseDueUploads(at(YEAR), 1000, 10)).toEqual([]);
        expect(await store.issuances.leaseUpload(r.credentialId, at(YEAR), 1000)).toBe(false);
        const { records } = await store.history.list({ limit: 10, order: 'createdAt_desc', now: T0 });
        expect(records[0]).toMatchObject({ channel: 'oid4vci', uploadState: 'none' });
      });

      it('offers: code once, token, issued; tx code checks counted before comparing, to a lock; lookups by digest', async () => {
        const store = await open();
        const o = offer();
        await store.oid4vci.createOffer(o);
        expect(await store.oid4vci.offerByHash(o.offerHash)).toMatchObject({
          ...o,
          state: 'offered',
          txCodeAttempts: 0,
          tokenHash: null,
        });
        expect((await store.oid4vci.offerByCode(o.codeHash))?.offerHash).toBe(o.offerHash);
        expect(await store.oid4vci.takeTxCodeCheck(o.offerHash, 2, at(1000))).toBe(1);
        // Past the offer's expiry, no check and no exchange.
        expect(await store.oid4vci.takeTxCodeCheck(o.offerHash, 2, at(60_000))).toBeUndefined();
        const token = { tokenHash: randomUUID(), expiresAt: at(90_000), dpopJkt: 'jkt' };
        expect(await store.oid4vci.exchangeCode(o.offerHash, token, at(60_000))).toBe(false);
        expect(await store.oid4vci.exchangeCode(o.offerHash, token, at(1000))).toBe(true);
        expect(await store.oid4vci.exchangeCode(o.offerHash, token, at(1000))).toBe(false);
        expect(await store.oid4vci.takeTxCodeCheck(o.offerHash, 2, at(1000))).toBeUndefined();
        expect(await store.oid4vci.offerByToken(token.tokenHash)).toMatchObject({
          state: 'token',
          dpopJkt: 'jkt',
          tokenExpiresAt: at(90_000),
          txCodeAttempts: 1,
        });
        expect(await store.oid4vci.markIssued(o.offerHash, 'cred-1')).toBe(true);
        expect(await store.oid4vci.markIssued(o.offerHash, 'cred-2')).toBe(false);
        expect(await store.oid4vci.offerByHash(o.offerHash)).toMatchObject({
          state: 'issued',
          credentialId: 'cred-1',
        });

        const locked = offer();
        await store.oid4vci.createOffer(locked);
        expect(await store.oid4vci.takeTxCodeCheck(locked.offerHash, 2, at(1000))).toBe(1);
        expect(await store.oid4vci.takeTxCodeCheck(locked.offerHash, 2, at(1000))).toBe(2);
        expect(await store.oid4vci.takeTxCodeCheck(locked.offerHash, 2, at(1000))).toBeUndefined();
        expect(await store.oid4vci.lockOffer(locked.offerHash)).toBe(true);
        expect(await store.oid4vci.lockOffer(locked.offerHash)).toBe(false);
        expect(await store.oid4vci.exchangeCode(locked.offerHash, token, at(1000))).toBe(false);
        expect(await store.oid4vci.offerByHash(locked.offerHash)).toMatchObject({
          state: 'locked',
          txCodeAttempts: 2,
        });
      });

      it('racing tx code checks: never more than the limit between them', async () => {
        const store = await open();
        const o = offer();
        await store.oid4vci.createOffer(o);
        const checks = await Promise.all(
          Array.from({ length: 20 }, () => store.oid4vci.takeTxCodeCheck(o.offerHash, 5, at(1000))),
        );
        expect(checks.filter((c) => c !== undefined).sort()).toEqual([1, 2, 3, 4, 5]);
      });

      it('racing exchanges of one code: exactly one wins', async () => {
        const store = await open();
        const o = offer();
        await store.oid4vci.createOffer(o);
        const wins = await Promise.all(
          Array.from({ length: 8 }, () =>
            store.oid4vci.exchangeCode(
              o.offerHash,
              { tokenHash: randomUUID(), expiresAt: at(9000), dpopJkt: null },
              T0,
            ),
          ),
        );
        expect(wins.filter(Boolean)).toHaveLength(1);
      });

      // RFC 9449 §11.1 and §8
      it('DPoP proofs are remembered until they expire; DPoP nonces are known until pruned', async () => {
        const store = await open();
        const seen = await Promise.all(
          Array.from({ length: 4 }, () => store.oid4vci.rememberDpopProof('p1', at(1000), T0)),
        );
        expect(seen.filter(Boolean)).toHaveLength(1);
        expect(await store.oid4vci.rememberDpopProof('p1', at(2000), at(999))).toBe(false);
        // Once its record has expired, the proof could not be fresh any more: its digest is reusable.
        expect(await store.oid4vci.rememberDpopProof('p1', at(5000), at(1000))).toBe(true);
        expect(await store.oid4vci.rememberDpopProof('p1', at(6000), at(4000))).toBe(false);
        await store.oid4vci.createDpopNonce('d1', at(1000));
        expect(await store.oid4vci.dpopNonceExpiry('d1')).toEqual(at(1000));
        expect(await store.oid4vci.dpopNonceExpiry('d1')).toEqual(at(1000));
        expect(await store.oid4vci.dpopNonceExpiry('nope')).toBeUndefined();
        expect(await store.oid4vci.prune(at(5500))).toBe(2);
        expect(await store.oid4vci.dpopNonceExpiry('d1')).toBeUndefined();
        expect(await store.oid4vci.rememberDpopProof('p1', at(9000), at(1000))).toBe(true);
      });

      it('nonces are taken once; prune drops expired nonces and spent offers', async () => {
        const store = await open();
        await store.oid4vci.createNonce('n1', at(1000));
        await store.oid4vci.createNonce('n2', at(1000));
        const taken = await Promise.all([store.oid4vci.takeNonce('n1'), store.oid4vci.takeNonce('n1')]);
        expect(taken.filter((t) => t !== undefined)).toEqual([at(1000)]);
        expect(await store.oid4vci.takeNonce('nope')).toBeUndefined();
        const old = offer({ expiresAt: at(500) });
        const live = offer({ expiresAt: at(5000) });
        await store.oid4vci.createOffer(old);
        await store.oid4vci.createOffer(live);
        expect(await store.oid4vci.prune(at(2000))).toBe(2);
        expect(await store.oid4vci.offerByHash(old.offerHash)).toBeUndefined();
        expect(await store.oid4vci.offerByHash(live.offerHash)).toBeDefined();
        expect(await store.oid4vci.takeNonce('n2')).toBeUndefined();
      });
    });

    // docs/operations.md "Renewal"
    describe('renewals', () => {
      const DAY = 86_400_000;
      const direct = async (store: Store, expiresAt: Date, schemaId = 'renewing-v1') => {
        const n = issuance({ channel: 'direct', schemaId, expiresAt });
        await store.renewals.addSource({
          credentialId: n.credentialId,
          schemaId,
          expiresAt,
          recipientSealed: `v1.sealed-${n.credentialId}`,
          claimsUserId: 'u1',
        });
        return insert(store, n);
      };
      /** A sweep's read at T0: a 30-day window ahead, and renewals cut short finished up to 30 days back. */
      const due = (store: Store, limit: number, finishSince = at(-30 * DAY)) =>
        store.renewals.due('renewing-v1', { finishSince, from: T0, until: at(30 * DAY) }, limit);

      it('due: direct, valid, inside the window, no outcome; soonest expiry first', async () => {
        const store = await open();
        const later = await direct(store, at(20 * DAY));
        const sooner = await direct(store, at(10 * DAY));
        await direct(store, at(40 * DAY)); // outside the window
        await direct(store, at(10 * DAY), 'other-v1'); // another schema
        const revoked = await direct(store, at(5 * DAY));
        await store.status.changeStatus(revoked.revocationNonce, 'revoke', T0);
        const skipped = await direct(store, at(6 * DAY));
        expect(
          await store.renewals.recordOutcome(skipped.credentialId, 'renewing-v1', skipped.expiresAt, {
            outcome: 'ineligible',
            detail: 'gone',
            at: T0,
            audit: { actor: 'renewal-sweep', reason: 'gone', action: 'renewal.skipped' },
          }),
        ).toBe(true);
        expect(await due(store, 10)).toEqual([sooner.credentialId, later.credentialId]);
        expect(await due(store, 1)).toEqual([sooner.credentialId]);
        expect(await store.renewals.get(sooner.credentialId)).toMatchObject({
          recipientSealed: `v1.sealed-${sooner.credentialId}`,
          claimsUserId: 'u1',
          outcome: null,
          renewedBy: null,
        });
      });

      it('a renewal cut short stays due until its outcome; a renewed outcome is final, with one audit row and event', async () => {
        const store = await open();
        const old = await direct(store, at(10 * DAY));
        await store.status.changeStatus(old.revocationNonce, 'revoke', T0);
        expect(await due(store, 10)).toEqual([]);
        const renewing = await insert(store, issuance({ channel: 'direct', renewedFrom: old.credentialId }));
        expect(await due(store, 10)).toEqual([old.credentialId]);
        expect(await store.history.renewalLinks([old.credentialId, renewing.credentialId, 'x'])).toEqual(
          new Map([
            [old.credentialId, { renewedFrom: null, renewedBy: renewing.credentialId }],
            [renewing.credentialId, { renewedFrom: old.credentialId, renewedBy: null }],
          ]),
        );
        // The console's credential page reads the batch id written with the issuance.
        const batched = await insert(store, issuance({ channel: 'direct', batchId: 'batch-0123abcd' }));
        expect(await store.history.batchOf(batched.credentialId)).toBe('batch-0123abcd');
        expect(await store.history.batchOf(old.credentialId)).toBeNull();
        expect(await store.history.batchOf('x')).toBeNull();
        const write = {
          outcome: 'renewed' as const,
          renewedBy: renewing.credentialId,
          detail: 'sweep',
          at: T0,
          audit: { actor: 'renewal-sweep', reason: 'sweep', action: 'renew' as const },
        };
        expect(
          await store.renewals.recordOutcome(old.credentialId, 'renewing-v1', old.expiresAt, write),
        ).toBe(true);
        expect(
          await store.renewals.recordOutcome(old.credentialId, 'renewing-v1', old.expiresAt, write),
        ).toBe(false);
        expect(await due(store, 10)).toEqual([]);
        expect(await store.renewals.get(old.credentialId)).toMatchObject({
          outcome: 'renewed',
          renewedBy: renewing.credentialId,
        });
        const audit = await store.audit.list({ limit: 10, action: 'renew' });
        expect(audit.records.map((r) => r.target)).toEqual([old.credentialId]);
      });

      it('due: a renewal cut short of a credential expired within finishSince is taken to finish; an expired credential without one, or expired before it, is not', async () => {
        const store = await open();
        const cutShort = (previous: { credentialId: string }) =>
          insert(store, issuance({ channel: 'direct', renewedFrom: previous.credentialId }));
        const valid = await direct(store, at(10 * DAY));
        const expiredCut = await direct(store, at(-5 * DAY));
        await cutShort(expiredCut);
        // Revoked by hand after its renewal was recorded: still finished (outcome, audit, event).
        const expiredCutRevoked = await direct(store, at(-3 * DAY));
        await cutShort(expiredCutRevoked);
        await store.status.changeStatus(expiredCutRevoked.revocationNonce, 'revoke', T0);
        await direct(store, at(-2 * DAY)); // expired, no renewal begun: never started now
        await direct(store, T0); // expires at `from` exactly: expired, no renewal begun
        const beforeGrace = await direct(store, at(-31 * DAY));
        await cutShort(beforeGrace);
        await cutShort(await direct(store, at(-30 * DAY))); // at finishSince exactly: outside
        const finished = await direct(store, at(-4 * DAY));
        const finishing = await cutShort(finished);
        expect(
          await store.renewals.recordOutcome(finished.credentialId, 'renewing-v1', finished.expiresAt, {
            outcome: 'renewed',
            renewedBy: finishing.credentialId,
            detail: 'renewal sweep',
            at: T0,
            audit: { actor: 'renewal-sweep', reason: 'renewal sweep', action: 'renew' },
          }),
        ).toBe(true);

        expect(await due(store, 10)).toEqual([
          expiredCut.credentialId,
          expiredCutRevoked.credentialId,
          valid.credentialId,
        ]);
        expect(await due(store, 1)).toEqual([expiredCut.credentialId]);
        // No grace: only credentials not yet expired, as before renewals were finished after expiry.
        expect(await due(store, 10, T0)).toEqual([valid.credentialId]);
        // The bound is the caller's: a longer grace reaches the older renewal cut short.
        expect(await due(store, 10, at(-40 * DAY))).toEqual([
          beforeGrace.credentialId,
          expect.any(String),
          expiredCut.credentialId,
          expiredCutRevoked.credentialId,
          valid.credentialId,
        ]);
      });

      it('dropSource drops a source with no credential under its id, never one with', async () => {
        const store = await open();
        const kept = await direct(store, at(10 * DAY));
        await store.renewals.addSource({
          credentialId: 'never-signed',
          schemaId: 'renewing-v1',
          expiresAt: at(10 * DAY),
          recipientSealed: 'v1.x',
          claimsUserId: null,
        });
        await store.renewals.dropSource('never-signed');
        await store.renewals.dropSource(kept.credentialId);
        expect(await store.renewals.get('never-signed')).toBeUndefined();
        expect(await store.renewals.get(kept.credentialId)).toMatchObject({
          recipientSealed: expect.any(String),
        });
      });

      it('a replacement clears not_renewable (the email opens now), never ineligible or renewed', async () => {
        const store = await open();
        const skip = (id: string, expiresAt: Date, outcome: 'ineligible' | 'not_renewable') =>
          store.renewals.recordOutcome(id, 'renewing-v1', expiresAt, {
            outcome,
            detail: outcome,
            at: T0,
            audit: { actor: 'renewal-sweep', reason: outcome, action: 'renewal.skipped' },
          });
        const unopened = await direct(store, at(5 * DAY));
        const already = await direct(store, at(6 * DAY));
        const changed = await direct(store, at(7 * DAY));
        const ineligible = await direct(store, at(8 * DAY));
        const renewedOne = await direct(store, at(9 * DAY));
        for (const r of [unopened, already, changed])
          expect(await skip(r.credentialId, r.expiresAt, 'not_renewable')).toBe(true);
        expect(await skip(ineligible.credentialId, ineligible.expiresAt, 'ineligible')).toBe(true);
        const renewing = await insert(
          store,
          issuance({ channel: 'direct', renewedFrom: renewedOne.credentialId }),
        );
        expect(
          await store.renewals.recordOutcome(renewedOne.credentialId, 'renewing-v1', renewedOne.expiresAt, {
            outcome: 'renewed',
            renewedBy: renewing.credentialId,
            detail: 'renewed',
            at: T0,
            audit: { actor: 'renewal-sweep', reason: 'renewal sweep', action: 'renew' },
          }),
        ).toBe(true);
        expect(await due(store, 10)).toEqual([]);

        const sealed = (id: string) => `v1.sealed-${id}`;
        expect(
          await store.renewals.replaceSealedRecipients([
            {
              credentialId: unopened.credentialId,
              recipientSealed: sealed(unopened.credentialId),
              to: 'v1.new-a',
            },
            // Already under the new key: its email stays, its outcome is cleared all the same.
            {
              credentialId: already.credentialId,
              recipientSealed: sealed(already.credentialId),
              to: sealed(already.credentialId),
            },
            // Changed since it was read: neither resealed nor reopened.
            { credentialId: changed.credentialId, recipientSealed: 'v1.not-what-is-stored', to: 'v1.new-c' },
            {
              credentialId: ineligible.credentialId,
              recipientSealed: sealed(ineligible.credentialId),
              to: 'v1.new-d',
            },
            {
              credentialId: renewedOne.credentialId,
              recipientSealed: sealed(renewedOne.credentialId),
              to: 'v1.new-e',
            },
          ]),
        ).toEqual({ resealed: 3, reopened: 2 });
        expect(await store.renewals.get(unopened.credentialId)).toMatchObject({
          recipientSealed: 'v1.new-a',
          outcome: null,
          outcomeAt: null,
          detail: null,
        });
        expect(await store.renewals.get(already.credentialId)).toMatchObject({
          recipientSealed: sealed(already.credentialId),
          outcome: null,
        });
        expect(await store.renewals.get(changed.credentialId)).toMatchObject({ outcome: 'not_renewable' });
        expect(await store.renewals.get(ineligible.credentialId)).toMatchObject({
          recipientSealed: 'v1.new-d',
          outcome: 'ineligible',
        });
        expect(await store.renewals.get(renewedOne.credentialId)).toMatchObject({
          recipientSealed: 'v1.new-e',
          outcome: 'renewed',
          renewedBy: renewing.credentialId,
        });
        // The sweep takes the reopened ones again.
        expect(await due(store, 10)).toEqual([unopened.credentialId, already.credentialId]);
      });

      it('sealed recipients page in credential id order; a replacement applies only to the text it read', async () => {
        const store = await open();
        const rows = [];
        for (let n = 0; n < 3; n++) rows.push(await direct(store, at((n + 1) * DAY)));
        // A source without a sealed recipient (issued before renewal existed) is not listed.
        await store.renewals.addSource({
          credentialId: 'no-recipient',
          schemaId: 'renewing-v1',
          expiresAt: at(DAY),
          recipientSealed: null,
          claimsUserId: null,
        });
        const ids = rows.map((r) => r.credentialId).sort();
        const first = await store.renewals.sealedRecipients(null, 2);
        expect(first.map((r) => r.credentialId)).toEqual(ids.slice(0, 2));
        expect(first[0]!.recipientSealed).toBe(`v1.sealed-${ids[0]}`);
        const rest = await store.renewals.sealedRecipients(first[1]!.credentialId, 2);
        expect(rest.map((r) => r.credentialId)).toEqual(ids.slice(2));
        expect(await store.renewals.sealedRecipients(ids[2]!, 2)).toEqual([]);

        expect(
          await store.renewals.replaceSealedRecipients([
            { credentialId: ids[0]!, recipientSealed: `v1.sealed-${ids[0]}`, to: 'v1.new-0' },
            // Changed since it was read: left as it is.
            { credentialId: ids[1]!, recipientSealed: 'v1.not-what-is-stored', to: 'v1.new-1' },
          ]),
        ).toEqual({ resealed: 1, reopened: 0 });
        expect(await store.renewals.replaceSealedRecipients([])).toEqual({ resealed: 0, reopened: 0 });
        expect((await store.renewals.get(ids[0]!))?.recipientSealed).toBe('v1.new-0');
        expect((await store.renewals.get(ids[1]!))?.recipientSealed).toBe(`v1.sealed-${ids[1]}`);
      });
    });
  });
}
