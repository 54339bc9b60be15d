import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../src/store/sqlite/index.js';
import type { NewIssuance, StatusSlot } from '../../../src/store/store.js';

function issuance(slot: StatusSlot | null, nonce: number, extra: Partial<NewIssuance> = {}): NewIssuance {
  const id = randomUUID();
  const now = new Date('2030-01-01T00:00:00Z');
  return {
    credentialId: id,
    channel: 'hosted',
    userId: 'u',
    holderDid: 'did:example:h',
    schemaId: 's',
    proofType: 'SD_JWT_VC',
    revocationNonce: nonce,
    statusSlot: slot,
    subjectHash: `h-${id}`,
    kid: 'k',
    createdAt: now,
    expiresAt: new Date('2031-01-01T00:00:00Z'),
    envelope: {
      holderDid: 'did:example:h',
      schemaId: 's',
      expiresAt: '2031-01-01T00:00:00.000Z',
      data: 'AA==',
      iv: 'AA==',
      authTag: 'AA==',
      encryptedKey: 'AA==',
      externalId: id,
    },
    ...extra,
  };
}

// DESIGN §9: status slots and nonces are allocated once, in the issuance's transaction.
describe('SqliteIssuanceStore', () => {
  it('refuses a taken slot or nonce and a full partition, so the caller signs again', async () => {
    const store = openSqliteStore(':memory:');
    const slot = await store.issuances.proposeStatusSlot(8, 1);
    expect((await store.issuances.insertIssuance(issuance(slot, 1), { dedupe: false })).kind).toBe(
      'inserted',
    );
    expect((await store.issuances.insertIssuance(issuance(slot, 2), { dedupe: false })).kind).toBe(
      'slot-taken',
    );
    const other = await store.issuances.proposeStatusSlot(8, 1);
    expect((await store.issuances.insertIssuance(issuance(other, 1), { dedupe: false })).kind).toBe(
      'nonce-taken',
    );
    for (let n = 2; n <= 8; n++) {
      const s = await store.issuances.proposeStatusSlot(8, 1);
      expect(s.partition).toBe(0);
      expect((await store.issuances.insertIssuance(issuance(s, n + 10), { dedupe: false })).kind).toBe(
        'inserted',
      );
    }
    // Partition 0 is full: the next proposal opens partition 1.
    expect((await store.issuances.proposeStatusSlot(8, 1)).partition).toBe(1);
    await store.close();
  });

  it('opens a new partition when the configured size or bits change', async () => {
    const store = openSqliteStore(':memory:');
    const a = await store.issuances.proposeStatusSlot(16, 1);
    await store.issuances.insertIssuance(issuance(a, 1), { dedupe: false });
    const b = await store.issuances.proposeStatusSlot(16, 2);
    expect(b.partition).toBe(a.partition + 1);
    expect((await store.status.getPartition(b.partition))?.bits).toBe(2);
    const c = await store.issuances.proposeStatusSlot(32, 2);
    expect(c.partition).toBe(b.partition + 1);
    await store.close();
  });

  it('a hosted repeat finds the live original; revoked or expired ones do not count', async () => {
    const store = openSqliteStore(':memory:');
    const first = issuance(null, 1, { subjectHash: 'same' });
    await store.issuances.insertIssuance(first, { dedupe: true });
    const again = await store.issuances.insertIssuance(issuance(null, 2, { subjectHash: 'same' }), {
      dedupe: true,
    });
    expect(again).toMatchObject({ kind: 'duplicate', record: { credentialId: first.credentialId } });
    await store.status.changeStatus(1, 'revoke', new Date());
    expect(
      (await store.issuances.insertIssuance(issuance(null, 3, { subjectHash: 'same' }), { dedupe: true }))
        .kind,
    ).toBe('inserted');
    const later = new Date('2032-01-01T00:00:00Z');
    expect(
      await store.issuances.findLiveDuplicate({
        holderDid: 'did:example:h',
        schemaId: 's',
        proofType: 'SD_JWT_VC',
        subjectHash: 'same',
        now: later,
      }),
    ).toBeUndefined();
    await store.close();
  });
});
