import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { UploadOutbox } from '../../src/issuance/outbox.js';
import { loadKeyRing } from '../../src/keys/key-ring.js';
import { postJson } from '../../src/outbound/http-json.js';
import { PartnerJwtSigner } from '../../src/service-client/partner-jwt.js';
import { ServiceClient } from '../../src/service-client/service-client.js';
import { copyDatabase } from '../../src/store/copy-database.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { IssuanceRecord, NewIssuance } from '../../src/store/store.js';
import { expectError } from '../helpers/errors.js';
import { queryStore, removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import {
  createMigratedDatabase,
  createTempDatabase,
  postgresAvailable,
  type TempDatabase,
} from '../helpers/services.js';

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

/**
 * `retryFailedUploads` of the versions before PostgreSQL migration 023, as they run it (the admin
 * route POST /admin/uploads/retry and `npm run admin -- uploads retry`): the issuance alone is
 * queued again, its envelope's row keeps due_at NULL.
 */
const RETRY_BEFORE_023 = `UPDATE issuances SET upload_state = 'pending', upload_attempts = 0, next_attempt_at = $1, lease_until = NULL
       WHERE upload_state = 'failed' AND credential_id = ANY($2::text[])
       RETURNING credential_id AS id`;

/** Orders [credentialId, …] rows by credential id. */
const byId = (x: unknown[], y: unknown[]) => String(x[0]).localeCompare(String(y[0]));

/** Resolves with the record of `credentialId` when one of the outboxes marks it uploaded. */
function uploadedBy(outboxes: UploadOutbox[], credentialId: string): Promise<IssuanceRecord> {
  return new Promise((resolve) => {
    for (const outbox of outboxes)
      outbox.on('uploaded', (record) => {
        if (record.credentialId === credentialId) resolve(record);
      });
  });
}

// docs/architecture.md "The outbox on PostgreSQL" (migration 023).
describe.skipIf(!available)('the outbox on PostgreSQL', () => {
  let db: TempDatabase;
  let store: PostgresStore;
  beforeAll(async () => {
    db = await createMigratedDatabase();
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

  it('a failed upload queued again by a version before migration 023 is made due by a sweep, and delivered', async () => {
    const at = new Date('2030-01-01T00:05:00Z');
    const later = new Date('2030-01-01T00:06:00Z');
    const requeued = pending(2001, at);
    const stays = pending(2002, at);
    for (const n of [requeued, stays]) {
      expect((await store.issuances.insertIssuance(n, { dedupe: false })).kind).toBe('inserted');
      expect((await store.issuances.markUploadFailed(n.credentialId, 'refused', at, 1)).gaveUp).toBe(true);
    }
    const { rows } = await store.pool.query(RETRY_BEFORE_023, [at, [requeued.credentialId]]);
    expect(rows).toEqual([{ id: requeued.credentialId }]);
    expect((await store.issuances.get(requeued.credentialId))?.uploadState).toBe('pending');
    // What that write leaves: a pending upload the outbox's reads do not reach.
    expect(await store.issuances.countPendingUploads()).toBe(0);
    expect(await store.issuances.leaseDueUploads(later, 60_000, 10)).toEqual([]);

    expect(await store.issuances.repairUnseenUploads(later)).toBe(1);
    expect(await store.issuances.repairUnseenUploads(later)).toBe(0);
    expect(await store.issuances.countPendingUploads()).toBe(1);
    expect(await store.issuances.nextUploadDue()).toEqual(at);
    const leased = await store.issuances.leaseDueUploads(later, 60_000, 10);
    expect(leased.map((r) => [r.credentialId, r.envelope?.data])).toEqual([
      [requeued.credentialId, requeued.envelope!.data],
    ]);
    await store.issuances.markUploaded(requeued.credentialId, '/vcs/requeued', later);
    expect((await store.issuances.get(requeued.credentialId))?.uploadState).toBe('uploaded');
    expect(await store.issuances.countPendingUploads()).toBe(0);
    // The upload that was not retried stays failed, out of the outbox.
    expect((await store.issuances.get(stays.credentialId))?.uploadState).toBe('failed');
    expect(await store.issuances.countFailedUploads()).toBe(1);
    const { rows: left } = await store.pool.query(
      'SELECT credential_id, due_at FROM issuance_envelopes ORDER BY credential_id',
    );
    expect(left).toEqual([{ credential_id: stays.credentialId, due_at: null }]);
  });

  it('the sweep reads failed uploads a page at a time and finds a requeued one behind a page of them', async () => {
    const paged = await createMigratedDatabase();
    const other = await openPostgresStore(paged.url, { poolMax: 2 });
    try {
      // 1,100 failed uploads, ids in order f00001 … f01100, each with its row and no due time.
      await other.pool.query(`
        INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
          subject_hash, kid, created_at, expires_at, envelope, upload_state, upload_attempts, last_error)
        SELECT 'f' || lpad(i::text, 5, '0'), 'hosted', 'u', 'did:example:f' || i, 'membership-v1', 'SD_JWT_VC', i,
          's' || i, 'kid-1', timestamptz '2030-01-01', timestamptz '2031-01-01', '', 'failed', 10, 'refused'
        FROM generate_series(1, 1100) AS i;
        INSERT INTO issuance_envelopes (credential_id, body, due_at) SELECT credential_id, '{}', NULL FROM issuances`);
      const at = new Date('2030-01-01T00:05:00Z');
      const { rows } = await other.pool.query(RETRY_BEFORE_023, [at, ['f01100']]);
      expect(rows).toEqual([{ id: 'f01100' }]);
      // Pages of 500: the first two calls read f00001 … f01000, the third the rest; then from the start.
      const found: number[] = [];
      for (let call = 0; call < 4; call++) found.push(await other.issuances.repairUnseenUploads(at));
      expect(found).toEqual([0, 0, 1, 0]);
      const leased = await other.issuances.leaseDueUploads(at, 60_000, 10);
      expect(leased.map((r) => r.credentialId)).toEqual(['f01100']);
      expect(await other.issuances.countFailedUploads()).toBe(1099);
    } finally {
      await other.close();
      await paged.drop();
    }
  });

  it('a failed upload given up by a version before migration 023 is taken out of the due index by a sweep', async () => {
    const at = new Date('2030-01-01T00:05:00Z');
    const later = new Date('2030-01-01T00:06:00Z');
    const givenUp = pending(2101, new Date('2030-01-01T00:00:01Z'));
    const waiting = pending(2102, at);
    for (const n of [givenUp, waiting])
      expect((await store.issuances.insertIssuance(n, { dedupe: false })).kind).toBe('inserted');
    // Its last attempt, as such an instance records it: on the issuance alone.
    await store.pool.query(
      `UPDATE issuances SET upload_state = 'failed', upload_attempts = 10, last_error = 'refused', next_attempt_at = NULL,
         lease_until = NULL WHERE credential_id = $1`,
      [givenUp.credentialId],
    );
    const dueAt = async (id: string) =>
      (await store.pool.query('SELECT due_at FROM issuance_envelopes WHERE credential_id = $1', [id])).rows[0]
        ?.due_at as Date | null | undefined;
    expect(await dueAt(givenUp.credentialId)).toEqual(new Date('2030-01-01T00:00:01Z'));

    expect(await store.issuances.repairUnseenUploads(later)).toBe(0);
    expect(await dueAt(givenUp.credentialId)).toBeNull();
    expect(await dueAt(waiting.credentialId)).toEqual(at);
    expect((await store.issuances.get(givenUp.credentialId))?.uploadState).toBe('failed');
    const leased = await store.issuances.leaseDueUploads(later, 60_000, 10);
    expect(leased.map((r) => r.credentialId)).toEqual([waiting.credentialId]);
    await store.issuances.markUploaded(waiting.credentialId, '/vcs/waiting', later);
    // Retried by this version, it is due again and delivered.
    expect(await store.issuances.retryFailedUploads([givenUp.credentialId], later)).toEqual([
      givenUp.credentialId,
    ]);
    const again = await store.issuances.leaseDueUploads(later, 60_000, 10);
    expect(again.map((r) => [r.credentialId, r.envelope?.data])).toEqual([
      [givenUp.credentialId, givenUp.envelope!.data],
    ]);
    await store.issuances.markUploaded(givenUp.credentialId, '/vcs/given-up', later);
    expect(await dueAt(givenUp.credentialId)).toBeUndefined();
  });

  it('pending and failed uploads copied from SQLite, with or without an envelope, are found by the outbox; the failed ones once retried', async () => {
    const dir = tempDir();
    const target = await createTempDatabase();
    try {
      const sqlitePath = join(dir, 'issuer.db');
      const sqlite = openSqliteStore(sqlitePath);
      const due = new Date('2030-01-01T00:01:00Z');
      const waiting = pending(1001, due);
      const refused = pending(1002, due);
      // Pending or failed without an envelope on SQLite, each set so by hand: one queued again after
      // its delivery (the mark deleted its envelope), one whose envelope was deleted while pending,
      // and a failed one whose envelope was deleted.
      const redelivered = pending(1003, due);
      const bare = pending(1004, new Date('2030-01-01T00:00:30Z'));
      const bareFailed = pending(1005, due);
      for (const n of [waiting, refused, redelivered, bare, bareFailed])
        expect((await sqlite.issuances.insertIssuance(n, { dedupe: false })).kind).toBe('inserted');
      for (const n of [refused, bareFailed])
        expect((await sqlite.issuances.markUploadFailed(n.credentialId, 'refused', due, 1)).gaveUp).toBe(
          true,
        );
      await sqlite.issuances.markUploaded(redelivered.credentialId, '/vcs/redelivered', due);
      sqlite.db
        .prepare("UPDATE issuances SET upload_state = 'pending', next_attempt_at = ? WHERE credential_id = ?")
        .run(due.getTime(), redelivered.credentialId);
      const dropEnvelope = sqlite.db.prepare('DELETE FROM issuance_envelopes WHERE credential_id = ?');
      for (const n of [bare, bareFailed]) dropEnvelope.run(n.credentialId);
      expect(sqlite.db.prepare('SELECT credential_id FROM issuance_envelopes').pluck().all()).toEqual(
        expect.arrayContaining([waiting.credentialId, refused.credentialId]),
      );
      expect(sqlite.db.prepare('SELECT count(*) FROM issuance_envelopes').pluck().get()).toBe(2);
      // SQLite's outbox reads the issuances: all three pending uploads are in it.
      expect(await sqlite.issuances.countPendingUploads()).toBe(3);
      expect(await sqlite.issuances.countFailedUploads()).toBe(2);
      await sqlite.close();

      const copied = await copyDatabase(`sqlite:${sqlitePath}`, target.url, { cwd: dir });
      expect(copied.ok).toBe(true);
      // Verified against SQLite's two envelopes; the outbox's rows for the other three are added.
      expect(copied.tables.find((t) => t.table === 'issuance_envelopes')).toMatchObject({
        rows: 2,
        ok: true,
        added: { rows: 3 },
      });
      const copy = await openPostgresStore(target.url, { poolMax: 2 });
      try {
        const now = new Date('2030-01-01T00:02:00Z');
        expect(await copy.issuances.countPendingUploads()).toBe(3);
        expect(await copy.issuances.countFailedUploads()).toBe(2);
        expect(await copy.issuances.nextUploadDue()).toEqual(bare.uploadDueAt);
        const leased = await copy.issuances.leaseDueUploads(now, 60_000, 10);
        expect(leased.map((r) => [r.credentialId, r.envelope?.data, r.uploadedAt]).sort(byId)).toEqual(
          [
            [bare.credentialId, undefined, null],
            [waiting.credentialId, waiting.envelope!.data, null],
            [redelivered.credentialId, undefined, due],
          ].sort(byId),
        );
        expect(await copy.issuances.retryFailedUploads('all', now)).toEqual(
          expect.arrayContaining([refused.credentialId, bareFailed.credentialId]),
        );
        expect(await copy.issuances.countFailedUploads()).toBe(0);
        const retried = await copy.issuances.leaseDueUploads(now, 60_000, 10);
        expect(retried.map((r) => [r.credentialId, r.envelope?.data]).sort(byId)).toEqual(
          [
            [refused.credentialId, refused.envelope!.data],
            [bareFailed.credentialId, undefined],
          ].sort(byId),
        );
        await copy.issuances.markUploaded(refused.credentialId, '/vcs/x', now);
        expect(await copy.issuances.countPendingUploads()).toBe(4);
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

const KEK = 'c3'.repeat(32);

// docs/architecture.md "The outbox on PostgreSQL": instances of this version finish what an
// instance of a version before migration 023 queues during a rolling upgrade.
describe.skipIf(!available)('an upload queued again by an instance from before migration 023', () => {
  let db: TempDatabase;
  let a: TestIssuer;
  let b: TestIssuer;
  const dirs = [tempDir(), tempDir()];

  beforeAll(async () => {
    db = await createMigratedDatabase();
    // One attempt: the request's failed upload is given up at once, as the retry needs.
    const env = {
      DATABASE_URL: db.url,
      KEY_ENCRYPTION_KEY: KEK,
      UPLOAD_MAX_ATTEMPTS: '1',
      OUTBOX_SWEEP_MS: '100',
    };
    a = await startIssuer({ dir: dirs[0], env });
    mkdirSync(join(dirs[1]!, 'keys'));
    b = await startIssuer({
      dir: dirs[1],
      env: { ...env, SERVICE_V1_BASE_URL: a.ctx.config.serviceBaseUrl! },
      exampleClaimsFile: '',
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
    for (const d of dirs) removeDir(d);
  });

  it('is delivered by the instances of this version, once', async () => {
    a.emulator!.faults.failNext('dstorage', 1, 500);
    const res = await a.post('/issue-vc', {
      holderDID: 'did:example:rolling-upgrade',
      pubKey: generateHolderKeyPair().publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    await expectError(res, 502, 'UPSTREAM_UNAVAILABLE');
    const [issued] = await queryStore<{ credential_id: string }>(
      a.ctx.store,
      'SELECT credential_id FROM issuances WHERE holder_did = ?',
      ['did:example:rolling-upgrade'],
    );
    const id = issued!.credential_id;
    expect(await a.ctx.store.issuances.get(id)).toMatchObject({ uploadState: 'failed' });

    const delivered = uploadedBy([a.ctx.outbox, b.ctx.outbox], id);
    // The older instance's retry, on a connection of its own.
    const older = new pg.Client({ connectionString: db.url });
    await older.connect();
    try {
      const { rows } = await older.query(RETRY_BEFORE_023, [new Date(), [id]]);
      expect(rows).toEqual([{ id }]);
    } finally {
      await older.end();
    }
    await delivered;
    // Every attempt either instance started has finished once both have stopped.
    await Promise.all([a.ctx.outbox.stop(), b.ctx.outbox.stop()]);
    const requests = a.emulator!.state.requests.filter((r) => r.route === 'dstorage' && r.externalId === id);
    expect(requests.map((r) => r.status)).toEqual([500, 201]);
    expect(a.emulator!.state.envelopes.has(id)).toBe(true);
    expect(await a.ctx.store.issuances.get(id)).toMatchObject({ uploadState: 'uploaded', uploadAttempts: 1 });
    expect(await a.ctx.store.issuances.countPendingUploads()).toBe(0);
    expect(await a.ctx.store.issuances.countFailedUploads()).toBe(0);
  });
});

// src/issuance/outbox.ts `drain`: a sweep that fires while a drain runs joins it, and the repair
// it brings is run by that drain before its next batch, not skipped for as long as the drain lasts.
describe.skipIf(!available)('a sweep during a long drain', () => {
  let db: TempDatabase;
  let store: PostgresStore;
  const dir = tempDir();
  beforeAll(async () => {
    db = await createMigratedDatabase();
    store = await openPostgresStore(db.url, { poolMax: 4 });
  });
  afterAll(async () => {
    vi.useRealTimers();
    await store?.close();
    await db?.drop();
    removeDir(dir);
  });

  it('owes its repair to the running drain, which makes the requeued upload due and delivers it', async () => {
    const due = new Date(Date.now() - 60_000);
    const first = pending(3001, due);
    const requeued = pending(3002, due);
    for (const n of [first, requeued])
      expect((await store.issuances.insertIssuance(n, { dedupe: false })).kind).toBe('inserted');
    expect((await store.issuances.markUploadFailed(requeued.credentialId, 'refused', due, 1)).gaveUp).toBe(
      true,
    );

    // The hosting service: it holds the first upload until the test lets it answer.
    const stored: string[] = [];
    let held: ServerResponse | undefined;
    let onArrival: () => void = () => {};
    const arrived = new Promise<void>((resolve) => (onArrival = resolve));
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const { externalId } = JSON.parse(body) as { externalId: string };
        stored.push(externalId);
        if (externalId === first.credentialId && !held) {
          held = res;
          onArrival();
          return;
        }
        res
          .writeHead(201, { 'content-type': 'application/json' })
          .end(JSON.stringify({ storagePath: `/vcs/${externalId}` }));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const ring = await loadKeyRing(join(dir, 'keys'), { generateIfMissing: true });
    const client = new ServiceClient(
      () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      new PartnerJwtSigner({
        partnerId: 'p-1',
        identity: { origin: 'https://issuer.example' },
        key: () => ring.partner,
      }),
      postJson,
      60_000,
    );
    // The sweep fires when the test says: its interval is the only timer frozen.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const outbox = new UploadOutbox(store.issuances, client, { sweepMs: 5000, batchSize: 1 });
    try {
      const started = outbox.start({ recover: false });
      await arrived;
      // While the start's drain waits on the first upload, an instance of a version before
      // migration 023 queues the failed one again, and a sweep fires.
      const { rows } = await store.pool.query(RETRY_BEFORE_023, [due, [requeued.credentialId]]);
      expect(rows).toEqual([{ id: requeued.credentialId }]);
      vi.advanceTimersByTime(5000);
      held!.writeHead(201, { 'content-type': 'application/json' });
      held!.end(JSON.stringify({ storagePath: `/vcs/${first.credentialId}` }));
      // The same drain repairs and delivers it; no later sweep is needed.
      await started;
      expect(stored).toEqual([first.credentialId, requeued.credentialId]);
      expect((await store.issuances.get(requeued.credentialId))?.uploadState).toBe('uploaded');
      expect(await store.issuances.countPendingUploads()).toBe(0);
    } finally {
      vi.useRealTimers();
      await outbox.stop();
      server.closeAllConnections();
      server.close();
    }
  });
});
