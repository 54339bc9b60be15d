import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { newWebhookEventId } from '../../src/store/webhook-store.js';
import { Webhooks } from '../../src/webhooks/webhooks.js';
import { removeDir, tempDir } from '../helpers/tmp.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

// src/webhooks/webhooks.ts: with no endpoint registered, the look for new events reads nothing.
describe('the webhook look with no endpoint', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  const worker = (store: Awaited<ReturnType<typeof openSqliteStore>>) =>
    new Webhooks(store.webhooks, {
      policy: { production: false, allowPrivate: true },
      kek: undefined,
      maxAttempts: 3,
      sweepMs: 3_600_000,
      lookMs: 5,
    });

  it('does not read the database until an endpoint is added, then looks as before', async () => {
    const dir = tempDir();
    const store = await openSqliteStore(join(dir, 'issuer.db'));
    cleanup.push(
      () => removeDir(dir),
      () => store.close(),
    );
    const looks = vi.spyOn(store.webhooks, 'hasNewEvents');
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'Date'] });
    const webhooks = worker(store);
    await webhooks.start();
    cleanup.push(() => webhooks.stop());
    await store.webhooks.recordEvent(
      { id: newWebhookEventId(), type: 'key.rotated', data: '{}' },
      new Date(),
    );
    // A second of looks every 5 ms: none reads, there is nobody to tell.
    await vi.advanceTimersByTimeAsync(1000);
    expect(looks).not.toHaveBeenCalled();
    const hook = await webhookReceiver();
    cleanup.push(() => hook.close());
    await webhooks.add({ url: hook.url, events: ['*'] });
    await vi.advanceTimersByTimeAsync(20);
    expect(looks).toHaveBeenCalled();
  });

  it('an endpoint added through this instance while a sweep reads the endpoints starts the looks', async () => {
    const dir = tempDir();
    const store = await openSqliteStore(join(dir, 'issuer.db'));
    cleanup.push(
      () => removeDir(dir),
      () => store.close(),
    );
    // The first sweep's read of the endpoints answers "none" only once the endpoint is added.
    const list = store.webhooks.listEndpoints.bind(store.webhooks);
    let readStarted!: () => void;
    const reading = new Promise<void>((resolve) => (readStarted = resolve));
    let finishRead!: () => void;
    const added = new Promise<void>((resolve) => (finishRead = resolve));
    vi.spyOn(store.webhooks, 'listEndpoints').mockImplementationOnce(async () => {
      const none = await list();
      readStarted();
      await added;
      return none;
    });
    const looks = vi.spyOn(store.webhooks, 'hasNewEvents');
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'Date'] });
    const webhooks = worker(store);
    const started = webhooks.start();
    cleanup.push(() => webhooks.stop());
    await reading;
    const hook = await webhookReceiver();
    cleanup.push(() => hook.close());
    await webhooks.add({ url: hook.url, events: ['*'] });
    finishRead();
    await started;
    await vi.advanceTimersByTimeAsync(20);
    expect(looks).toHaveBeenCalled();
  });

  it('an endpoint added through another instance is seen by the next sweep, and its events go out', async () => {
    const dir = tempDir();
    const store = await openSqliteStore(join(dir, 'issuer.db'));
    cleanup.push(
      () => removeDir(dir),
      () => store.close(),
    );
    const here = worker(store);
    await here.start();
    cleanup.push(() => here.stop());
    // The other instance registers the endpoint; this one has not read it yet.
    const other = worker(store);
    const hook = await webhookReceiver();
    cleanup.push(() => hook.close());
    await other.add({ url: hook.url, events: ['*'] });
    await store.webhooks.recordEvent(
      { id: newWebhookEventId(), type: 'key.rotated', data: '{}' },
      new Date(),
    );
    // This instance's next sweep reads the endpoint, fans the event out and delivers it.
    await here.sweep();
    await hook.until(() => hook.attempts.length === 1);
    expect(hook.attempts[0]!.type).toBe('key.rotated');
  });
});
