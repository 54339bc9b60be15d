import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import type { OpenedStore } from '../../src/store/engines.js';
import { migrate, readMigrations } from '../../src/store/postgres/database.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { runMigrations } from '../../src/store/sqlite/database.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { IssuanceRecord, UploadBody } from '../../src/store/store.js';
import { expectError } from '../helpers/errors.js';
import { queryStore, startIssuer, type TestIssuer } from '../helpers/issuer.js';
import {
  createMigratedDatabase,
  createTempDatabase,
  postgresAvailable,
  type TempDatabase,
} from '../helpers/services.js';
import { removeDir, tempDir } from '../helpers/tmp.js';

const postgres = await postgresAvailable('issuance envelopes on PostgreSQL');
const engines = postgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

const sha256Hex = (base64: string) =>
  createHash('sha256').update(Buffer.from(base64, 'base64')).digest('hex');
const envelopeRows = async (store: OpenedStore) =>
  (await queryStore<{ credential_id: string }>(store, 'SELECT credential_id FROM issuance_envelopes')).map(
    (r) => r.credential_id,
  );

// docs/architecture.md "Envelopes until delivered": an issuance's envelope is kept in
// issuance_envelopes until the hosting service has stored it, then deleted; the issuance keeps the
// SHA-256 of the ciphertext. What still needs the envelope (a failed upload's retry) has it.
describe.each(engines)('issuance envelopes (%s)', (engine) => {
  let issuer: TestIssuer;
  let db: TempDatabase | undefined;
  const holder = generateHolderKeyPair('x25519');
  const issue = (holderDID: string) =>
    issuer.post('/issue-vc', {
      holderDID,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
  const storedUpstream = (holderDid: string) =>
    issuer.emulator!.state.envelopesOf(holderDid).map((s) => s.envelope as UploadBody);

  beforeAll(async () => {
    db = engine === 'postgres' ? await createMigratedDatabase() : undefined;
    issuer = await startIssuer({
      env: { UPLOAD_MAX_ATTEMPTS: '3', ...(db ? { DATABASE_URL: db.url } : {}) },
    });
  });
  afterAll(async () => {
    await issuer.close();
    await db?.drop();
  });

  it('once stored upstream the envelope is gone and the record keeps the SHA-256 of what was stored', async () => {
    const did = `did:example:delivered-${engine}`;
    expect((await issue(did)).status).toBe(201);
    const [upstream] = storedUpstream(did);
    expect(typeof openEnvelope(holder.privateKey, upstream!)).toBe('string');
    const record = await issuer.ctx.store.issuances.get(upstream!.externalId);
    expect(record).toMatchObject({
      uploadState: 'uploaded',
      envelope: null,
      envelopeSha256: sha256Hex(upstream!.data),
    });
    expect(await envelopeRows(issuer.ctx.store)).not.toContain(upstream!.externalId);

    // A repeat answers 201 from the record: nothing signed, nothing sent again.
    expect((await issue(did)).status).toBe(201);
    expect(storedUpstream(did)).toHaveLength(1);
    expect(await issuer.ctx.store.issuances.get(upstream!.externalId)).toEqual(record);
  });

  it('a failed upload keeps its whole envelope, and `uploads retry` delivers it and then drops it', async () => {
    const did = `did:example:failed-${engine}`;
    issuer.emulator!.faults.failNext('dstorage', 100, 400);
    const gaveUp = once(issuer.ctx.outbox, 'gave_up') as Promise<[IssuanceRecord]>;
    await expectError(await issue(did), 502, 'UPSTREAM_UNAVAILABLE');
    const [failed] = await gaveUp;
    const kept = await issuer.ctx.store.issuances.get(failed.credentialId);
    expect(kept?.uploadState).toBe('failed');
    expect(typeof openEnvelope(holder.privateKey, kept!.envelope!)).toBe('string');
    expect(kept!.envelopeSha256).toBe(sha256Hex(kept!.envelope!.data));
    expect(await envelopeRows(issuer.ctx.store)).toEqual([failed.credentialId]);

    issuer.emulator!.faults.clear();
    const uploaded = once(issuer.ctx.outbox, 'uploaded');
    const retried = await issuer.admin('/admin/uploads/retry', { credentialId: failed.credentialId });
    expect(retried.status).toBe(200);
    await uploaded;
    const [upstream] = storedUpstream(did);
    expect(typeof openEnvelope(holder.privateKey, upstream!)).toBe('string');
    expect(await issuer.ctx.store.issuances.get(failed.credentialId)).toMatchObject({
      uploadState: 'uploaded',
      envelope: null,
      envelopeSha256: sha256Hex(upstream!.data),
    });
    expect(await envelopeRows(issuer.ctx.store)).toEqual([]);
  });
});

/** A row as the issuances table held it before the envelopes had a table of their own. */
function oldRow(uploadState: 'pending' | 'failed' | 'uploaded', envelope: object) {
  const id = randomUUID();
  return {
    id,
    uploadState,
    values: [id, `did:example:${id}`, 1 + Math.floor(Math.random() * 2 ** 40), JSON.stringify(envelope)],
  };
}
const wholeEnvelope = (id = randomUUID()) => ({
  holderDid: 'did:example:old',
  schemaId: 'membership-v1',
  expiresAt: '2031-01-01T00:00:00.000Z',
  data: Buffer.from(`ciphertext ${id}`).toString('base64'),
  iv: 'aXY=',
  authTag: 'dGFn',
  encryptedKey: 'a2V5',
  externalId: id,
});

// The migration (SQLite 016, PostgreSQL 019) copies the envelopes of uploads pending or failed
// at the time into issuance_envelopes, so that the outbox still sends them; rows delivered before
// keep what they held in the retired column and have no envelope to send.
describe.each(engines)('the envelopes migration (%s)', (engine) => {
  let dir = '';
  let db: TempDatabase | undefined;
  afterAll(async () => {
    if (dir) removeDir(dir);
    await db?.drop();
  });

  it('moves the envelopes of pending and failed uploads to their table; the outbox sends them, then drops them', async () => {
    const pending = oldRow('pending', wholeEnvelope());
    const failed = oldRow('failed', wholeEnvelope());
    const { data: _, ...withoutData } = wholeEnvelope();
    const delivered = oldRow('uploaded', { ...withoutData, dataSha256: 'ab'.repeat(32) });
    const rows = [pending, failed, delivered];
    let store: OpenedStore;
    if (engine === 'sqlite') {
      dir = tempDir();
      const before = join(dir, 'migrations');
      mkdirSync(before);
      const shipped = join(process.cwd(), 'src/store/sqlite/migrations');
      for (const f of readdirSync(shipped).filter((f) => f < '016'))
        copyFileSync(join(shipped, f), join(before, f));
      const file = join(dir, 'issuer.db');
      const raw = new Database(file);
      runMigrations(raw, before);
      const insert = raw.prepare(
        `INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
           subject_hash, kid, created_at, expires_at, envelope, upload_state, next_attempt_at)
         VALUES (@id, 'hosted', 'old', @did, 'membership-v1', 'SD_JWT_VC', @nonce, @id, 'k', '2030-01-01T00:00:00.000Z',
           '2031-01-01T00:00:00.000Z', @envelope, @state, @next)`,
      );
      for (const r of rows) {
        const [id, did, nonce, envelope] = r.values;
        insert.run({
          id,
          did,
          nonce,
          envelope,
          state: r.uploadState,
          next: r.uploadState === 'pending' ? 0 : null,
        });
      }
      raw.close();
      store = openSqliteStore(file);
    } else {
      db = await createTempDatabase();
      const pool = new pg.Pool({ connectionString: db.url, max: 1 });
      await migrate(
        pool,
        readMigrations().filter((m) => m.version < 19),
      );
      for (const r of rows)
        await pool.query(
          `INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
             subject_hash, kid, created_at, expires_at, envelope, upload_state, next_attempt_at)
           VALUES ($1, 'hosted', 'old', $2, 'membership-v1', 'SD_JWT_VC', $3, $1, 'k', '2030-01-01T00:00:00Z',
             '2031-01-01T00:00:00Z', $4, $5, $6)`,
          [...r.values, r.uploadState, r.uploadState === 'pending' ? new Date(0) : null],
        );
      await pool.end();
      store = await openPostgresStore(db.url, { poolMax: 2 });
    }
    try {
      expect((await envelopeRows(store)).sort()).toEqual([pending.id, failed.id].sort());
      const [due] = await store.issuances.leaseDueUploads(new Date(), 60_000, 10);
      expect(due).toMatchObject({
        credentialId: pending.id,
        envelope: JSON.parse(pending.values[3] as string),
      });
      expect((await store.issuances.get(failed.id))?.envelope).toEqual(
        JSON.parse(failed.values[3] as string),
      );
      expect(await store.issuances.get(delivered.id)).toMatchObject({
        uploadState: 'uploaded',
        envelope: null,
        envelopeSha256: null,
      });
      await store.issuances.markUploaded(pending.id, '/vcs/old', new Date());
      expect(await store.issuances.get(pending.id)).toMatchObject({
        uploadState: 'uploaded',
        envelope: null,
      });
      expect(await envelopeRows(store)).toEqual([failed.id]);
    } finally {
      await store.close();
    }
  });
});
