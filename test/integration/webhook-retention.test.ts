import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { Store } from '../../src/store/store.js';
import { newWebhookEventId, type WebhookEventType } from '../../src/store/webhook-store.js';
import { Webhooks } from '../../src/webhooks/webhooks.js';
import { createMigratedDatabase, postgresAvailable } from '../helpers/services.js';
import { removeDir, tempDir } from '../helpers/tmp.js';

// docs/operations.md "Webhooks": delivered deliveries older than WEBHOOK_RETENTION_DAYS are
// deleted, with the events left with no delivery; failed deliveries and the newest event stay.

const DAY = 86_400_000;

/** A receiver answering 500 to `key.compromised` events and 204 to the rest; records sequences. */
async function receiver() {
  const sequences: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; sequence: number };
      sequences.push(event.sequence);
      res.writeHead(event.type === 'key.compromised' ? 500 : 204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    sequences,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

const postgres = await postgresAvailable('the PostgreSQL webhook retention test');

const engines: Array<[string, boolean, () => Promise<{ store: Store; close: () => Promise<void> }>]> = [
  [
    'SQLite',
    true,
    async () => {
      const dir = tempDir();
      const store = openSqliteStore(join(dir, 'issuer.db'));
      return {
        store,
        close: async () => {
          await store.close();
          removeDir(dir);
        },
      };
    },
  ],
  [
    'PostgreSQL',
    postgres,
    async () => {
      const db = await createMigratedDatabase();
      const store = await openPostgresStore(db.url, { poolMax: 4 });
      return {
        store,
        close: async () => {
          await store.close();
          await db.drop();
        },
      };
    },
  ],
];

describe.each(engines)('webhook retention on %s', (_engine, available, open) => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it.skipIf(!available)(
    'deletes delivered deliveries and their events past the retention, in bounded steps; keeps failed ones and the newest event',
    async () => {
      const { store, close } = await open();
      cleanup.push(close);
      const hook = await receiver();
      cleanup.push(() => hook.close());
      const webhooks = new Webhooks(store.webhooks, {
        policy: { production: false, allowPrivate: false },
        kek: undefined,
        maxAttempts: 1,
        sweepMs: 3_600_000,
        retentionMs: 30 * DAY,
        // Steps of 3 events: the purge walks past the failed ones at the head in several steps.
        pruneBatch: 3,
      });
      const { id: endpointId } = await webhooks.add({ url: hook.url, events: ['*'] });
      await webhooks.start();
      cleanup.push(() => webhooks.stop());

      const record = (type: WebhookEventType) =>
        store.webhooks.recordEvent({ id: newWebhookEventId(), type, data: '{"kid":"k"}' }, new Date());
      // The oldest two fail for good (one attempt), the ten after them are delivered.
      for (let i = 0; i < 2; i++) await record('key.compromised');
      for (let i = 0; i < 10; i++) await record('key.rotated');
      const states = async () => {
        const page = await webhooks.deliveries(endpointId, { limit: 100 });
        return page!.deliveries.map((d) => d.state).sort();
      };
      await expect
        .poll(async () => {
          await webhooks.sweep();
          return states();
        })
        .toEqual([...Array(10).fill('delivered'), 'failed', 'failed']);
      const newest = Math.max(...hook.sequences);

      // Nothing is older than the retention yet.
      expect(await webhooks.prune()).toEqual({ deliveries: 0, events: 0 });
      expect(await states()).toHaveLength(12);

      // 31 days on: every delivered delivery goes, and every event but the failed ones' and the newest.
      expect(await webhooks.prune(new Date(Date.now() + 31 * DAY))).toEqual({ deliveries: 10, events: 9 });
      expect(await states()).toEqual(['failed', 'failed']);
      expect(await webhooks.countFailed()).toBe(2);

      // The failed deliveries can still be retried (the receiver still answers 500: failed again).
      const failed = (await webhooks.deliveries(endpointId, { state: 'failed', limit: 10 }))!.deliveries;
      expect(await webhooks.retry(failed[0]!.id)).toBe(true);
      await expect
        .poll(async () => {
          await webhooks.sweep();
          return states();
        })
        .toEqual(['failed', 'failed']);

      // The newest event stayed: the next event's sequence follows it without a gap.
      await record('key.rotated');
      await expect
        .poll(async () => {
          await webhooks.sweep();
          return hook.sequences.at(-1);
        })
        .toBe(newest + 1);
    },
  );

  it.skipIf(!available)(
    'one purge at a time among the workers sharing the locks; a stopping worker ends its purge after the current step',
    async () => {
      const { store, close } = await open();
      cleanup.push(close);
      const hook = await receiver();
      cleanup.push(() => hook.close());
      const worker = () =>
        new Webhooks(store.webhooks, {
          policy: { production: false, allowPrivate: false },
          kek: undefined,
          maxAttempts: 1,
          sweepMs: 3_600_000,
          retentionMs: 30 * DAY,
          pruneBatch: 3,
          locks: store.locks,
        });
      const first = worker();
      const { id: endpointId } = await first.add({ url: hook.url, events: ['*'] });
      await first.start();
      // The purge every start runs (nothing is old yet) is over before the test's own.
      await first.prune();
      for (let i = 0; i < 10; i++)
        await store.webhooks.recordEvent(
          { id: newWebhookEventId(), type: 'key.rotated', data: '{"kid":"k"}' },
          new Date(),
        );
      const delivered = async () =>
        (await first.deliveries(endpointId, { state: 'delivered', limit: 100 }))!.deliveries.length;
      await expect
        .poll(async () => {
          await first.sweep();
          return delivered();
        })
        .toBe(10);
      const later = new Date(Date.now() + 31 * DAY);

      // Another process's purge holds the lock: this one deletes nothing.
      expect(await store.locks.tryAcquire('webhook-prune', 'another-instance', 60_000)).toBe(true);
      expect(await first.prune(later)).toEqual({ deliveries: 0, events: 0 });
      expect(await delivered()).toBe(10);
      await store.locks.release('webhook-prune', 'another-instance');

      // Stopped as its purge starts: one step (3 events) is done, the rest waits for the next run.
      const cut = first.prune(later);
      await first.stop();
      expect(await cut).toEqual({ deliveries: 3, events: 3 });

      const second = worker();
      await second.start();
      cleanup.push(() => second.stop());
      await second.prune();
      // The lock was given up: the next worker's purge takes it and finishes (the newest event stays).
      expect(await second.prune(later)).toEqual({ deliveries: 7, events: 6 });
      expect(await delivered()).toBe(0);
    },
  );
});
