import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { expectError } from '../helpers/errors.js';
import { queryStore, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer } from '../helpers/issuer.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

/** A webhook receiver on a loopback port: answers each request with the next of `answers` (then 204). */
async function receiver(answers: number[] = []) {
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answered = answers.shift() ?? 204;
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
      res.writeHead(answered).end(answered >= 300 ? 'not now' : undefined);
      for (const w of waiters.splice(0)) w();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    /** Resolves once `check` holds for what was received. */
    async until(check: (r: Received[]) => boolean) {
      while (!check(received)) await new Promise<void>((ok) => waiters.push(ok));
    },
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

const del = (issuer: TestIssuer, path: string) =>
  fetch(`${issuer.url}${path}`, { method: 'DELETE', headers: { 'x-admin-api-key': TEST_ADMIN_API_KEY } });

// docs/operations.md "Webhooks": Standard Webhooks headers and body, retries with the same
// webhook-id, events written with the change they report.
describe('webhooks', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function start() {
    const issuer = await startIssuer({
      context: { webhooks: { baseBackoffMs: 5, maxBackoffMs: 20, sweepMs: 20 } },
    });
    cleanup.push(() => issuer.close());
    return issuer;
  }

  it('delivers signed credential.issued and credential.revoked events, retrying a failure with the same webhook-id', async () => {
    const issuer = await start();
    const hook = await receiver([503]);
    cleanup.push(() => hook.close());

    const added = await issuer.admin('/admin/webhooks', { url: hook.url, events: ['*'], description: 'crm' });
    expect(added.status).toBe(201);
    const endpoint = (await added.json()) as { id: string; secret: string; events: string[] };
    expect(endpoint.secret).toMatch(/^whsec_/);
    expect(endpoint.events).toEqual(['*']);
    const listed = (await (await issuer.admin('/admin/webhooks')).json()) as {
      webhooks: Array<Record<string, unknown>>;
    };
    expect(listed.webhooks).toHaveLength(1);
    expect(listed.webhooks[0]).toMatchObject({ id: endpoint.id, url: hook.url, description: 'crm' });
    expect(listed.webhooks[0]).not.toHaveProperty('secret');
    // PostgreSQL keeps the secret sealed, like the keys.
    const [stored] = await queryStore<{ secret: string }>(
      issuer.ctx.store,
      'SELECT secret FROM webhook_endpoints',
    );
    if (issuer.ctx.store.kind === 'postgres') expect(stored!.secret).not.toContain(endpoint.secret.slice(6));

    const holder = generateHolderKeyPair();
    const issued = await issuer.post('/issue-vc', {
      holderDID: 'did:example:hooked',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    expect(issued.status).toBe(201);
    await hook.until((r) => r.some((x) => x.answered === 204));

    const verifier = new Webhook(endpoint.secret);
    const [first, second] = hook.received;
    expect(first!.answered).toBe(503);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    const event = verifier.verify(second!.body, second!.headers as Record<string, string>) as {
      type: string;
      timestamp: string;
      sequence: number;
      data: Record<string, unknown>;
    };
    expect(event.type).toBe('credential.issued');
    const record = (await issuer.ctx.store.issuances.get(event.data.credentialId as string))!;
    expect(event.data).toMatchObject({
      schemaId: 'membership-v1',
      proofType: 'SD_JWT_VC',
      channel: 'hosted',
      holderDid: 'did:example:hooked',
      revocationNonce: record.revocationNonce,
      expiresAt: record.expiresAt.toISOString(),
    });
    expect(event.data.status).toMatchObject({ idx: record.statusSlot!.index });
    // No claim values, ciphertext, keys or tokens.
    expect(JSON.stringify(event)).not.toMatch(/Lovelace|ciphertext|credential"|"iv"/);

    expect(
      (
        await issuer.admin('/admin/revoke', {
          revocationNonce: String(record.revocationNonce),
          reason: 'left',
        })
      ).status,
    ).toBe(200);
    await hook.until((r) => r.filter((x) => x.answered === 204).length === 2);
    const revoked = verifier.verify(
      hook.received.at(-1)!.body,
      hook.received.at(-1)!.headers as Record<string, string>,
    ) as typeof event;
    expect(revoked.type).toBe('credential.revoked');
    expect(revoked.data).toMatchObject({
      credentialId: record.credentialId,
      revocationNonce: record.revocationNonce,
      reason: 'left',
    });
    expect(revoked.sequence).toBeGreaterThan(event.sequence);

    expect((await del(issuer, `/admin/webhooks/${endpoint.id}`)).status).toBe(200);
    await expectError(await del(issuer, `/admin/webhooks/${endpoint.id}`), 404, 'NOT_FOUND');
    expect(
      ((await (await issuer.admin('/admin/webhooks')).json()) as { webhooks: unknown[] }).webhooks,
    ).toEqual([]);
  });

  it('sends an endpoint only the event types it subscribed to', async () => {
    const issuer = await start();
    const hook = await receiver();
    cleanup.push(() => hook.close());
    const added = await issuer.admin('/admin/webhooks', { url: hook.url, events: ['credential.revoked'] });
    const { secret } = (await added.json()) as { secret: string };
    const res = await issuer.admin('/admin/issue-vc', {
      userId: 'only.revoked@example.org',
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership',
      expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
      credentialSubject: {
        givenName: 'Ada',
        familyName: 'Lovelace',
        memberSince: '2020-01-15',
        tier: 'gold',
        memberNumber: 7,
      },
    });
    expect(res.status).toBe(201);
    const { credentialId } = (await res.json()) as { credentialId: string };
    const record = (await issuer.ctx.store.issuances.get(credentialId))!;
    expect(
      (await issuer.admin('/admin/revoke', { revocationNonce: String(record.revocationNonce) })).status,
    ).toBe(200);
    await hook.until((r) => r.length === 1);
    const event = new Webhook(secret).verify(
      hook.received[0]!.body,
      hook.received[0]!.headers as Record<string, string>,
    );
    expect(event).toMatchObject({ type: 'credential.revoked', data: { credentialId } });
  });

  it.each([
    [{ url: 'ftp://hooks.example.com/', events: ['*'] }, 'url'],
    [{ url: 'not a url', events: ['*'] }, 'url'],
    [{ url: 'https://hooks.example.com/', events: ['credential.nope'] }, 'events.0'],
    [{ url: 'https://hooks.example.com/', events: [] }, 'events'],
    [{ url: 'https://hooks.example.com/', events: ['*'], secret: 'mine' }, 'body'],
    [{ events: ['*'] }, 'url'],
  ])('%j is 400 naming %s', async (body, field) => {
    const issuer = await start();
    const res = await issuer.admin('/admin/webhooks', body);
    await expectError(res, 400, 'INVALID_PARAMETER', field);
  });
});
