import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AppContext } from '../../../src/context.js';
import { lookAfterBackgroundWrites } from '../../../src/tenancy/tenant-config.js';
import { EndpointPresence } from '../../../src/webhooks/endpoint-presence.js';

// src/webhooks/endpoint-presence.ts: the webhook look reads nothing while no endpoint is registered.
describe('EndpointPresence', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('with none found, a look reads again only after staleMs; a sweep reads until one is found', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    let endpoints: string[] = [];
    const list = vi.fn(async () => endpoints);
    const presence = new EndpointPresence(list, 5000);
    // Not read yet: a look may find events.
    expect(await presence.mayHaveSome()).toBe(true);
    await presence.refresh();
    expect(list).toHaveBeenCalledTimes(1);
    expect(await presence.mayHaveSome()).toBe(false);
    vi.advanceTimersByTime(4999);
    expect(await presence.mayHaveSome()).toBe(false);
    expect(list).toHaveBeenCalledTimes(1);
    // One added through another instance: the first look after staleMs reads it.
    endpoints = ['e1'];
    vi.advanceTimersByTime(1);
    expect(await presence.mayHaveSome()).toBe(true);
    expect(list).toHaveBeenCalledTimes(2);
    // Known: neither looks nor sweeps read any more, until one is removed.
    await presence.refresh();
    expect(await presence.mayHaveSome()).toBe(true);
    expect(list).toHaveBeenCalledTimes(2);
    endpoints = [];
    presence.removed();
    await presence.refresh();
    expect(list).toHaveBeenCalledTimes(3);
    expect(await presence.mayHaveSome()).toBe(false);
    presence.added();
    expect(await presence.mayHaveSome()).toBe(true);
  });
});

// src/tenancy/tenant-config.ts: a tenant's background writes bring its backed-off look soon.
describe('lookAfterBackgroundWrites', () => {
  it('an upload marked, failed or given up, a status job chunk and a renewal sweep each ask for a look', () => {
    const ctx = {
      outbox: new EventEmitter(),
      statusJobs: new EventEmitter(),
      renewal: new EventEmitter(),
      webhooks: { lookSoon: vi.fn() },
    };
    lookAfterBackgroundWrites(ctx as unknown as AppContext);
    ctx.outbox.emit('uploaded');
    ctx.outbox.emit('failed');
    ctx.outbox.emit('gave_up');
    ctx.statusJobs.emit('changed');
    ctx.renewal.emit('swept', {});
    expect(ctx.webhooks.lookSoon).toHaveBeenCalledTimes(5);
  });
});
