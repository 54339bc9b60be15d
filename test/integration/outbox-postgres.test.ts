import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../../src/store/copy-database.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { NewIssuance } from '../../src/store/store.js';
import { removeDir, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const available = await postgresAvailable('the PostgreSQL outbox tests');

/** A hosted issuance with its envelope, due for upload at `due`. */
function pending(nonce: number, due: Date): NewIssuance {
  const credentialId = randomUUID();
  const createdAt = new Date('2030-01-01T00:00:00Z');
  const expiresAt = new Date('2031-01-01T00:00:00Z');
  return {
    credentialId,
    channel: 'hosted',
    userId: 'u',
    holderDid: `did:example:${credentialId}`,
    schemaId: 'membership-v1',
    proofType: 'SD_JWT_VC',
    revocationNonce: nonce,
    statusSlot: null,
    subjectHash: credentialId,
    kid: 'kid-1',
    createdAt,
    expiresAt,
    uploadDueAt: due,
    envelope: {
      holderDid: `did:example:${credentialId}`,
      schemaId: 'membership-v1',
      expiresAt: expiresAt.toISOString(),
      data: Buffer.from(`ciphertext ${nonce}`).toString('base64'),
      iv: 'aXY=',
      authTag: 'dGFn',
      encryptedKey: 'a2V5',
      externalId: credentialId,
    },
  };
}

// docs/architecture.md "The outbox on PostgreSQL" (migration 023).
describe.skipIf(!available)('the outbox on PostgreSQL', () => {
  let db: TempDatabase;
  let store: PostgresStore;
  beforeAll(async () => {
    db = await createTempDatabase();
    store = await openPostgresStore(db.url, { poolMax: 2 });
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('no index of issuances names a column an "uploaded" mark changes, so the mark can be a HOT update', async () => {
    const { rows } = await store.pool.query<{ name: string; def: string }>(
      `SELECT c.relname AS name, pg_get_indexdef(c.oid) AS def FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
       WHERE x.indrelid = 'issuances'::regclass`,
    );
    expect(rows.length).toBeGreaterThan(10);
    const changed = [
      'upload_state',
      'next_attempt_at',
      'lease_until',
      'storage_path',
      'uploaded_at',
      'upload_attempts',
    ];
    for (const { def } of rows) for (const column of changed) expect(def).not.toContain(column);
    // last_error: NULL before and after a first-attempt delivery, so its index is left alone.
    expect(rows.filter((r) => r.def.includes('last_error')).map((r) => r.name)).toEqual([
      'issuances_upload_error_created',
    ]);
  });

  it('a pending and a failed upload copied from SQLite are found by the outbox; the failed one once retried', async () => {
    const dir = tempDir();
    const target = await createTempDatabase();
    try {
      const sqlitePath = join(dir, 'issuer.db');
      const sqlite = openSqliteStore(sqlitePath);
      const due = new Date('2030-01-01T00:01:00Z');
      const waiting = pending(1001, due);
      const refused = pending(1002, due);
      for (const n of [waiting, refused])
        expect((await sqlite.issuances.insertIssuance(n, { dedupe: false })).kind).toBe('inserted');
      expect((await sqlite.issuances.markUploadFailed(refused.credentialId, 'refused', due, 1)).gaveUp).toBe(
        true,
      );
      await sqlite.close();

      const copied = await copyDatabase(`sqlite:${sqlitePath}`, target.url, { cwd: dir });
      expect(copied.ok).toBe(true);
      const copy = await openPostgresStore(target.url, { poolMax: 2 });
      try {
        const now = new Date('2030-01-01T00:02:00Z');
        expect(await copy.issuances.countPendingUploads()).toBe(1);
        expect(await copy.issuances.countFailedUploads()).toBe(1);
        expect(await copy.issuances.nextUploadDue()).toEqual(due);
        const leased = await copy.issuances.leaseDueUploads(now, 60_000, 10);
        expect(leased.map((r) => [r.credentialId, r.envelope?.data])).toEqual([
          [waiting.credentialId, waiting.envelope!.data],
        ]);
        expect(await copy.issuances.retryFailedUploads('all', now)).toEqual([refused.credentialId]);
        expect(await copy.issuances.countFailedUploads()).toBe(0);
        const retried = await copy.issuances.leaseDueUploads(now, 60_000, 10);
        expect(retried.map((r) => [r.credentialId, r.envelope?.data])).toEqual([
          [refused.credentialId, refused.envelope!.data],
        ]);
        await copy.issuances.markUploaded(refused.credentialId, '/vcs/x', now);
        expect(await copy.issuances.countPendingUploads()).toBe(1);
        expect((await copy.issuances.get(refused.credentialId))?.uploadState).toBe('uploaded');
      } finally {
        await copy.close();
      }
    } finally {
      await target.drop();
      removeDir(dir);
    }
  });
});
