import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { runMigrations } from '../../../src/store/sqlite/database.js';
import { openSqliteStore } from '../../../src/store/sqlite/index.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

const shipped = join(process.cwd(), 'src/store/sqlite/migrations');

/**
 * Migration 018 rebuilds webhook_events (no AUTOINCREMENT, no unique event id, the credential
 * index keyed by the credential's created_at) and webhook_deliveries beside it: a database with
 * events and deliveries keeps them, their sequence numbers and their links, and goes on counting.
 */
describe('SQLite migration 018: webhook events rebuilt', () => {
  let dir = '';
  afterEach(() => {
    if (dir) removeDir(dir);
    dir = '';
  });

  it('keeps events, deliveries and sequence numbers; new events continue the sequence', async () => {
    dir = tempDir();
    const migrations = join(dir, 'migrations');
    mkdirSync(migrations);
    for (const f of readdirSync(shipped).filter((f) => f < '018-'))
      copyFileSync(join(shipped, f), join(migrations, f));
    const path = join(dir, 'issuer.db');
    const db = new Database(path);
    db.pragma('foreign_keys = ON');
    runMigrations(db, migrations);
    db.prepare(
      `INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
         subject_hash, kid, created_at, expires_at, envelope, upload_state)
       VALUES ('cred-a', 'hosted', 'u', 'did:example:h', 'membership-v1', 'SD_JWT_VC', 7, 's', 'k',
         '2026-01-02T03:04:05.000Z', '2027-01-01T00:00:00.000Z', '{}', 'uploaded')`,
    ).run();
    db.prepare(
      `INSERT INTO webhook_endpoints (id, url, events, secret, created_at)
       VALUES ('ep_1', 'https://hooks.example/a', '["*"]', 'whsec_x', '2026-01-01T00:00:00.000Z')`,
    ).run();
    const event = db.prepare(
      'INSERT INTO webhook_events (id, type, data, created_at, fanned_out) VALUES (?, ?, ?, ?, ?)',
    );
    event.run('evt_1', 'credential.issued', '{"credentialId":"cred-a"}', 1, 1);
    event.run('evt_2', 'key.rotated', '{"kid":"k"}', 2, 1);
    event.run('evt_3', 'credential.delivered', '{"credentialId":"cred-a"}', 3, 0);
    const delivery = db.prepare(
      `INSERT INTO webhook_deliveries (id, event_seq, endpoint_id, state, created_at)
       VALUES (?, ?, 'ep_1', ?, '2026-01-02T03:04:06.000Z')`,
    );
    delivery.run('msg_1', 1, 'delivered');
    delivery.run('msg_2', 2, 'failed');
    db.close();

    const store = openSqliteStore(path);
    try {
      expect(
        store.db.prepare("SELECT name FROM sqlite_sequence WHERE name = 'webhook_events'").all(),
      ).toEqual([]);
      expect(store.db.prepare('PRAGMA foreign_key_check').all()).toEqual([]);
      expect(
        store.db.prepare('SELECT seq, id, fanned_out, credential_at FROM webhook_events ORDER BY seq').all(),
      ).toEqual([
        { seq: 1, id: 'evt_1', fanned_out: 1, credential_at: '2026-01-02T03:04:05.000Z' },
        { seq: 2, id: 'evt_2', fanned_out: 1, credential_at: null },
        { seq: 3, id: 'evt_3', fanned_out: 0, credential_at: '2026-01-02T03:04:05.000Z' },
      ]);
      expect(
        (await store.webhooks.listCredentialDeliveries('cred-a', 10)).map((d) => [d.id, d.sequence, d.state]),
      ).toEqual([['msg_1', 1, 'delivered']]);
      expect(
        (await store.webhooks.listDeliveries({ endpointId: 'ep_1', limit: 10 })).records.map((d) => d.id),
      ).toEqual(['msg_2', 'msg_1']);
      // The waiting event is fanned out, then a new event follows the largest sequence number.
      await store.webhooks.recordEvent(
        { id: 'evt_4', type: 'key.rotated', data: '{"kid":"k2"}' },
        new Date(4),
      );
      const leased = await store.webhooks.leaseDueDeliveries(new Date(5), 60_000, 10);
      expect(leased.map((d) => [d.eventId, d.sequence])).toEqual([
        ['evt_3', 3],
        ['evt_4', 4],
      ]);
      // A delivery still names its event: the foreign key follows the rebuilt table.
      expect(() =>
        store.db
          .prepare(
            `INSERT INTO webhook_deliveries (id, event_seq, endpoint_id, created_at) VALUES ('msg_x', 99, 'ep_1', 'x')`,
          )
          .run(),
      ).toThrow(/FOREIGN KEY/);
    } finally {
      await store.close();
    }
  });
});
