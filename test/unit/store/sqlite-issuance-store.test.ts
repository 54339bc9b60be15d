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

// docs/several-instances.md "Storage engines": status slots and nonces are allocated once, in the issuance's transaction.
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

  it('inserts racing in one turn each get their own outcome; a refused one leaves nothing behind', async () => {
    const store = openSqliteStore(':memory:');
    const slot = await store.issuances.proposeStatusSlot(8, 1);
    const other = await store.issuances.proposeStatusSlot(8, 1);
    const otherSlot = other.index === slot.index ? { ...other, index: (slot.index + 1) % 8 } : other;
    // Not awaited one by one: all four reach the store in the same turn.
    const outcomes = await Promise.all([
      store.issuances.insertIssuance(issuance(slot, 1), { dedupe: false }),
      store.issuances.insertIssuance(issuance(slot, 2), { dedupe: false }), // slot taken by the first
      store.issuances.insertIssuance(issuance(otherSlot, 1), { dedupe: false }), // nonce taken by the first
      store.issuances.insertIssuance(issuance(otherSlot, 3), { dedupe: false }),
    ]);
    expect(outcomes.map((o) => o.kind)).toEqual(['inserted', 'slot-taken', 'nonce-taken', 'inserted']);
    // The refused ones left nothing behind: two rows, and the partition counts two allocations.
    const ids = outcomes.flatMap((o) => (o.kind === 'inserted' ? [o.record.credentialId] : []));
    for (const id of ids) expect((await store.issuances.get(id))?.revocationNonce).toBeGreaterThan(0);
    expect(await store.issuances.getByNonce(2)).toBeUndefined();
    expect((await store.status.getPartition(slot.partition))?.allocated).toBe(2);
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

// Migration 008: fewer indexes on issuances, and every query over it still searches one.
describe('SQLite issuances query plans', () => {
  const plan = (store: ReturnType<typeof openSqliteStore>, sql: string): string[] =>
    (
      store.db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...Array(sql.split('?').length - 1).fill(1)) as Array<{
        detail: string;
      }>
    ).map((r) => r.detail);

  it.each([
    // The hosted duplicate check, status slot probes, outbox, metrics, status lists, key expiry, history.
    [
      "SELECT * FROM issuances WHERE holder_did = ? AND schema_id = ? AND +proof_type = ? AND subject_hash = ? AND channel = 'hosted' AND status = 0 AND expires_at > ? ORDER BY created_at DESC LIMIT 1",
      'issuances_holder_created',
    ],
    [
      'SELECT 1 FROM issuances WHERE status_partition = ? AND status_index = ?',
      'sqlite_autoindex_issuances_3',
    ],
    ['SELECT 1 FROM issuances WHERE revocation_nonce = ?', 'sqlite_autoindex_issuances_2'],
    ['SELECT * FROM issuances WHERE credential_id = ?', 'sqlite_autoindex_issuances_1'],
    [
      "SELECT * FROM issuances WHERE upload_state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?) ORDER BY next_attempt_at LIMIT ?",
      'issuances_outbox_pending',
    ],
    [
      "SELECT MIN(MAX(next_attempt_at, COALESCE(lease_until, 0))) FROM issuances WHERE upload_state = 'pending'",
      'issuances_outbox_pending',
    ],
    ["SELECT COUNT(*) FROM issuances WHERE upload_state = 'pending'", 'issuances_outbox_pending'],
    [
      "SELECT MIN(created_at) FROM issuances INDEXED BY issuances_outbox_pending WHERE upload_state = 'pending'",
      'issuances_outbox_pending',
    ],
    ["SELECT COUNT(*) FROM issuances WHERE upload_state = 'failed'", 'issuances_upload_failed'],
    [
      "UPDATE issuances SET upload_state = 'pending' WHERE upload_state = 'failed'",
      'issuances_upload_failed',
    ],
    [
      'SELECT status_index, status FROM issuances WHERE status_partition = ? AND status != 0',
      'issuances_nonzero_status',
    ],
    ['SELECT MAX(expires_at) FROM issuances WHERE kid = ?', 'issuances_kid_expiry'],
    [
      "SELECT * FROM issuances WHERE holder_did = ? AND schema_id = ? AND proof_type = 'SD_JWT_VC' AND status != 1 AND expires_at > ? ORDER BY created_at DESC, rowid DESC",
      'issuances_holder_created',
    ],
    [
      'SELECT * FROM issuances WHERE schema_id = ? ORDER BY created_at DESC, rowid DESC',
      'issuances_schema_created',
    ],
    ['SELECT * FROM issuances ORDER BY created_at DESC, rowid DESC LIMIT 10', 'issuances_created'],
  ])('%s searches %s', (sql, index) => {
    const store = openSqliteStore(':memory:');
    const steps = plan(store, sql);
    expect(steps.some((s) => s.includes(`INDEX ${index}`))).toBe(true);
    expect(steps.filter((s) => /^SCAN issuances$/.test(s))).toEqual([]);
  });

  it('a hosted insert writes no partial index (non-zero statuses, failed uploads)', async () => {
    const store = openSqliteStore(':memory:');
    const slot = await store.issuances.proposeStatusSlot(8, 1);
    await store.issuances.insertIssuance(issuance(slot, 7), { dedupe: true });
    const count = (index: string) =>
      (
        store.db
          .prepare(
            `SELECT COUNT(*) AS n FROM issuances INDEXED BY ${index} WHERE ${index === 'issuances_nonzero_status' ? 'status != 0' : "upload_state = 'failed'"}`,
          )
          .get() as { n: number }
      ).n;
    expect(count('issuances_nonzero_status')).toBe(0);
    expect(count('issuances_upload_failed')).toBe(0);
    const indexes = (
      store.db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'issuances'")
        .all() as Array<{ name: string }>
    ).map((r) => r.name);
    expect(indexes).not.toContain('issuances_dedupe');
    expect(indexes).not.toContain('issuances_outbox');
  });
});
