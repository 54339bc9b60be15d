import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { StoredKey } from '../../src/store/store.js';
import { newWebhookEventId } from '../../src/store/webhook-store.js';
import { createMigratedDatabase, postgresAvailable } from '../helpers/services.js';
import { removeDir, tempDir } from '../helpers/tmp.js';

// docs/operations.md "Webhooks": events are written in the transaction of the change they report,
// and only while an endpoint exists.

const endpoint = (id: string) => ({
  id,
  url: 'https://hooks.example.com/in',
  events: ['*'],
  description: null,
  secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0',
  createdAt: new Date(),
});

describe('webhook events on SQLite', () => {
  const cleanup: Array<() => void> = [];
  afterEach(() => {
    for (const fn of cleanup.splice(0).reverse()) fn();
  });

  it('an endpoint added or removed through another connection (another process on the file) is seen at the next change', async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const file = join(dir, 'issuer.db');
    const a = openSqliteStore(file);
    cleanup.push(() => a.db.close());
    const b = openSqliteStore(file);
    cleanup.push(() => b.db.close());
    const events = () => (a.db.prepare('SELECT type FROM webhook_events').all() as unknown[]).length;
    const record = () =>
      a.webhooks.recordEvent({ id: newWebhookEventId(), type: 'key.rotated', data: '{}' }, new Date());

    // No endpoint: A writes nothing, and remembers that.
    await record();
    await record();
    expect(events()).toBe(0);
    // B (another connection) adds one: A's next change has its event.
    await b.webhooks.addEndpoint(endpoint('wh_b'));
    await record();
    expect(events()).toBe(1);
    // B removes it: A writes nothing again.
    await b.webhooks.removeEndpoint('wh_b');
    await record();
    expect(events()).toBe(1);
    // A's own endpoint changes count at once too.
    await a.webhooks.addEndpoint(endpoint('wh_a'));
    await record();
    expect(events()).toBe(2);
    await a.webhooks.removeEndpoint('wh_a');
    await record();
    expect(events()).toBe(2);
  });
});

const postgres = await postgresAvailable('the PostgreSQL webhook event transaction tests');

describe.skipIf(!postgres)('webhook events on PostgreSQL', () => {
  const key = (kid: string): StoredKey => ({
    kid,
    purpose: 'credential-signing',
    createdAt: new Date('2030-01-01T00:00:00Z'),
    retiredAt: null,
    sealed: `sealed-${kid}`,
    standby: false,
    x5c: null,
  });

  it('a key rotation and its key.rotated event are one transaction: when the event cannot be written, no key changes', async () => {
    const db = await createMigratedDatabase();
    const store = await openPostgresStore(db.url, { poolMax: 4 });
    try {
      await store.keys.importIfEmpty([key('k1')]);
      await store.webhooks.addEndpoint(endpoint('wh_pg'));
      const at = new Date('2030-02-01T00:00:00Z');

      expect(await store.keys.rotate(key('k2'), at)).toEqual({ retired: ['k1'] });
      const { rows } = await store.pool.query<{ type: string; data: string }>(
        'SELECT type, data FROM webhook_events',
      );
      expect(rows.map((r) => [r.type, JSON.parse(r.data)])).toEqual([
        ['key.rotated', { purpose: 'credential-signing', kid: 'k2', retiredKid: 'k1' }],
      ]);

      // The event insert fails: the rotation rolls back with it.
      await store.pool.query(`
        CREATE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS
          $$ BEGIN RAISE EXCEPTION 'no events now'; END $$;
        CREATE TRIGGER refuse_event BEFORE INSERT ON webhook_events FOR EACH ROW EXECUTE FUNCTION refuse_event();`);
      const before = await store.keys.list();
      const version = await store.keys.version();
      await expect(store.keys.rotate(key('k3'), new Date('2030-03-01T00:00:00Z'))).rejects.toThrow(
        /no events now/,
      );
      await store.keys.addStandby(key('k4'));
      await expect(
        store.keys.promoteStandby('credential-signing', new Date('2030-04-01T00:00:00Z'), async () => 'k4'),
      ).rejects.toThrow(/no events now/);
      const after = await store.keys.list();
      // Only the standby key added in between; no key retired or promoted, no new key.
      expect(after.filter((k) => k.kid !== 'k4')).toEqual(before);
      expect(after.find((k) => k.kid === 'k4')).toMatchObject({ standby: true, retiredAt: null });
      expect(await store.keys.version()).toBe(version + 1);
    } finally {
      await store.close();
      await db.drop();
    }
  });
});
