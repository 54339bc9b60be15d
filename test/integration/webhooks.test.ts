import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { DEVELOPMENT_KEY_ENCRYPTION_KEY } from '../../src/config/key-encryption-key.js';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { WEBHOOK_EVENT_TYPES, WEBHOOK_EVENTS, type WebhookEventType } from '../../src/store/webhook-store.js';
import { Webhooks } from '../../src/webhooks/webhooks.js';
import { runCli } from '../helpers/cli.js';
import { adaMembership } from '../helpers/direct-issue.js';
import { expectError } from '../helpers/errors.js';
import {
  queryStore,
  removeDir,
  startIssuer,
  TEST_ADMIN_API_KEY,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable } from '../helpers/services.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

/**
 * A webhook receiver on a loopback port: answers each request of an event type with the next of
 * that type's `answers` (then 204).
 */
async function receiver(answers: Record<string, number[]> = {}) {
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const answered = answers[(JSON.parse(body) as { type: string }).type]?.shift() ?? 204;
      received.push({ headers: req.headers, body, answered });
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
/** Event types raised through an OpenID4VCI wallet (deferred issuance, notifications), not by this file's flows. */
const RAISED_BY_WALLETS: readonly WebhookEventType[] = [
  'credential.deferred',
  'credential.wallet_accepted',
  'credential.wallet_failure',
  'credential.wallet_deleted',
];

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
    const hook = await receiver({ 'credential.issued': [503] });
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
    const typeOf = (r: Received) => (JSON.parse(r.body) as { type: string }).type;
    const delivered = (type: string) => (r: Received[]) =>
      r.some((x) => x.answered === 204 && typeOf(x) === type);
    await hook.until((r) => delivered('credential.issued')(r) && delivered('credential.delivered')(r));

    const verifier = new Webhook(endpoint.secret);
    // The first attempt (503) and its retry carry the same webhook-id.
    const issuedAttempts = hook.received.filter((r) => typeOf(r) === 'credential.issued');
    expect(issuedAttempts.map((r) => r.answered)).toEqual([503, 204]);
    const [first, second] = issuedAttempts;
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
    // The upload to the hosting service: credential.delivered, after credential.issued.
    const deliveredRequest = hook.received.find((r) => typeOf(r) === 'credential.delivered')!;
    const deliveredEvent = verifier.verify(
      deliveredRequest.body,
      deliveredRequest.headers as Record<string, string>,
    ) as typeof event;
    expect(deliveredEvent.data).toMatchObject({ credentialId: record.credentialId, attempts: 1 });
    expect(deliveredEvent.data.storagePath).toEqual(expect.any(String));
    expect(deliveredEvent.sequence).toBeGreaterThan(event.sequence);
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
    await hook.until(delivered('credential.revoked'));
    const revokedRequest = hook.received.find((r) => typeOf(r) === 'credential.revoked')!;
    const revoked = verifier.verify(
      revokedRequest.body,
      revokedRequest.headers as Record<string, string>,
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
      ...adaMembership(),
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

  it('two workers on one store: each delivery attempted by one of them, once', async () => {
    const issuer = await start();
    const hook = await receiver();
    cleanup.push(() => hook.close());
    // A second instance's worker on the same database, sweeping as often as the first.
    const other = new Webhooks(issuer.ctx.store.webhooks, {
      policy: { production: false, allowPrivate: false },
      // The test issuers run on the development KEY_ENCRYPTION_KEY (none set).
      kek: issuer.ctx.store.keys ? DEVELOPMENT_KEY_ENCRYPTION_KEY : undefined,
      maxAttempts: 15,
      sweepMs: 20,
    });
    await other.start();
    cleanup.push(() => other.stop());
    await issuer.admin('/admin/webhooks', { url: hook.url, events: ['credential.issued'] });
    const holder = generateHolderKeyPair();
    const issued = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        issuer.post('/issue-vc', {
          holderDID: `did:example:raced-${n}`,
          pubKey: holder.publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
        }),
      ),
    );
    expect(issued.map((r) => r.status)).toEqual(Array(12).fill(201));
    await hook.until((r) => new Set(r.map((x) => x.headers['webhook-id'])).size === 12);
    const ids = hook.received.map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(12);
    const sequences = hook.received.map((r) => (JSON.parse(r.body) as { sequence: number }).sequence);
    expect(new Set(sequences).size).toBe(12);
  });

  it('a key rotation is key.rotated, and the status lists it re-signs are status_list.published', async () => {
    const issuer = await start();
    const hook = await receiver();
    cleanup.push(() => hook.close());
    expect(
      (
        await issuer.post('/issue-vc', {
          holderDID: 'did:example:before-rotation',
          pubKey: generateHolderKeyPair().publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
        })
      ).status,
    ).toBe(201);
    const { secret } = (await (
      await issuer.admin('/admin/webhooks', {
        url: hook.url,
        events: ['key.rotated', 'status_list.published'],
      })
    ).json()) as { secret: string };
    const before = issuer.ctx.keys.current().signing.kid;
    const rotated = await issuer.admin('/admin/keys/rotate', { purpose: 'credential-signing' });
    expect(rotated.status).toBe(200);
    const { created } = (await rotated.json()) as { created: { kid: string } };
    await hook.until((r) => r.length === 2);
    const events = hook.received.map((r) =>
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>),
    ) as Array<{ type: string; data: Record<string, unknown> }>;
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'key.rotated',
        data: { purpose: 'credential-signing', kid: created.kid, retiredKid: before },
      }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'status_list.published',
        data: { partition: 0, uri: `${issuer.url}/statuslist/0` },
      }),
    );
  });

  it('an upload given up is credential.delivery_failed, in the transaction that gives it up', async () => {
    const issuer = await start();
    const hook = await receiver();
    cleanup.push(() => hook.close());
    const { secret } = (await (
      await issuer.admin('/admin/webhooks', { url: hook.url, events: ['credential.delivery_failed'] })
    ).json()) as { secret: string };
    // The hosting service refuses the envelope for good: given up after 3 attempts.
    issuer.emulator!.faults.failNext('dstorage', 3, 400);
    await issuer.post('/issue-vc', {
      holderDID: 'did:example:refused',
      pubKey: generateHolderKeyPair().publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    await hook.until((r) => r.length === 1);
    const event = new Webhook(secret).verify(
      hook.received[0]!.body,
      hook.received[0]!.headers as Record<string, string>,
    ) as { type: string; data: { credentialId: string; attempts: number; lastError: string } };
    expect(event).toMatchObject({ type: 'credential.delivery_failed', data: { attempts: 3 } });
    expect(event.data.lastError).toEqual(expect.any(String));
    expect(await issuer.ctx.store.issuances.get(event.data.credentialId)).toMatchObject({
      uploadState: 'failed',
    });
  });

  it('gives up after WEBHOOK_MAX_ATTEMPTS, lists the failed delivery, and a retry after a secret rotation is signed with both secrets', async () => {
    const issuer = await startIssuer({
      env: { WEBHOOK_MAX_ATTEMPTS: '2' },
      context: { webhooks: { baseBackoffMs: 5, maxBackoffMs: 20, sweepMs: 20 } },
    });
    cleanup.push(() => issuer.close());
    const hook = await receiver({ 'credential.issued': [500, 500] });
    cleanup.push(() => hook.close());
    const { id, secret: oldSecret } = (await (
      await issuer.admin('/admin/webhooks', { url: hook.url, events: ['credential.issued'] })
    ).json()) as { id: string; secret: string };

    const gaveUp = once(issuer.ctx.webhooks, 'gave_up');
    expect(
      (
        await issuer.post('/issue-vc', {
          holderDID: 'did:example:gave-up',
          pubKey: generateHolderKeyPair().publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
        })
      ).status,
    ).toBe(201);
    await gaveUp;
    const metrics = await (await fetch(`${issuer.url}/metrics`)).text();
    expect(metrics).toMatch(/^issuer_webhook_deliveries_failed 1$/m);
    expect(metrics).toMatch(/^issuer_webhook_deliveries_total\{outcome="gave_up"\} 1$/m);
    expect(metrics).toMatch(/^issuer_webhook_deliveries_total\{outcome="retry"\} 1$/m);
    const failed = (await (await issuer.admin(`/admin/webhooks/${id}/deliveries?status=failed`)).json()) as {
      deliveries: Array<{ id: string; state: string; attempts: number; lastStatus: number; type: string }>;
    };
    expect(failed.deliveries).toHaveLength(1);
    expect(failed.deliveries[0]).toMatchObject({
      state: 'failed',
      attempts: 2,
      lastStatus: 500,
      type: 'credential.issued',
    });
    const deliveryId = failed.deliveries[0]!.id;
    expect(hook.received.map((r) => r.headers['webhook-id'])).toEqual([deliveryId, deliveryId]);

    const rotated = await issuer.admin(`/admin/webhooks/${id}/rotate-secret`, {});
    expect(rotated.status).toBe(200);
    const { secret: newSecret } = (await rotated.json()) as { secret: string };
    expect(newSecret).not.toBe(oldSecret);

    expect((await issuer.admin(`/admin/webhooks/deliveries/${deliveryId}/retry`, {})).status).toBe(200);
    await hook.until((r) => r.length === 3);
    const last = hook.received[2]!;
    expect(last.headers['webhook-id']).toBe(deliveryId);
    expect(String(last.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [newSecret, oldSecret])
      expect(new Webhook(secret).verify(last.body, last.headers as Record<string, string>)).toMatchObject({
        type: 'credential.issued',
      });
    const listed = async () =>
      (
        (await (await issuer.admin(`/admin/webhooks/${id}/deliveries`)).json()) as {
          deliveries: Array<{ state: string }>;
        }
      ).deliveries;
    // The receiver has answered; the mark follows. Listening first, so no mark goes unseen.
    for (;;) {
      const next = once(issuer.ctx.webhooks, 'delivered');
      if ((await listed())[0]?.state === 'delivered') break;
      await next;
    }

    // A delivery that is not failed, an unknown endpoint, a bad status filter.
    await expectError(
      await issuer.admin(`/admin/webhooks/deliveries/${deliveryId}/retry`, {}),
      404,
      'NOT_FOUND',
    );
    await expectError(
      await issuer.admin('/admin/webhooks/wh_00000000-0000-0000-0000-000000000000/rotate-secret', {}),
      404,
      'NOT_FOUND',
    );
    await expectError(
      await issuer.admin(`/admin/webhooks/${id}/deliveries?status=nope`),
      400,
      'INVALID_PARAMETER',
      'status',
    );
  });

  it('every event holds only its listed data fields: no claim value, ciphertext, key or token', async () => {
    const issuer = await startIssuer({
      env: { STATUS_LIST_BITS: '2' },
      context: { webhooks: { baseBackoffMs: 5, maxBackoffMs: 20, sweepMs: 20 } },
    });
    cleanup.push(() => issuer.close());
    const hook = await receiver();
    cleanup.push(() => hook.close());
    const { secret } = (await (
      await issuer.admin('/admin/webhooks', { url: hook.url, events: ['*'] })
    ).json()) as {
      secret: string;
    };
    const claims = {
      givenName: 'Zenobia',
      familyName: 'Quixotelle',
      memberSince: '2019-07-21',
      tier: 'platinum',
      memberNumber: 987654,
    };
    const direct = await issuer.admin('/admin/issue-vc', {
      userId: 'zenobia@example.org',
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership',
      expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
      credentialSubject: claims,
    });
    expect(direct.status).toBe(201);
    const { credentialId } = (await direct.json()) as { credentialId: string };
    const hosted = await issuer.post('/issue-vc', {
      holderDID: 'did:example:hygiene',
      pubKey: generateHolderKeyPair().publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    expect(hosted.status).toBe(201);
    // credential.renewed: the direct credential renewed, the provider answering the same claims.
    const { userId } = (await issuer.ctx.store.issuances.get(credentialId))!;
    await issuer.ctx.store.claims.upsertClaims([
      { userId, schemaId: 'membership-v1', claims, expiresAt: null },
    ]);
    expect((await issuer.admin('/admin/renew', { credentialId, reason: 'checked' })).status).toBe(201);
    // One upload refused for good: credential.delivery_failed.
    issuer.emulator!.faults.failNext('dstorage', 3, 400);
    await issuer.post('/issue-vc', {
      holderDID: 'did:example:hygiene-refused',
      pubKey: generateHolderKeyPair().publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    const nonce = String((await issuer.ctx.store.issuances.get(credentialId))!.revocationNonce);
    for (const change of ['suspend', 'unsuspend', 'revoke'])
      expect(
        (await issuer.admin(`/admin/${change}`, { revocationNonce: nonce, reason: 'checked' })).status,
      ).toBe(200);
    const firstKid = issuer.ctx.keys.current().signing.kid;
    expect((await issuer.admin('/admin/keys/rotate', { purpose: 'credential-signing' })).status).toBe(200);
    // key.compromised, and the revocations of its bulk job (with their jobId).
    expect((await issuer.admin('/admin/keys/compromised', { kid: firstKid, reason: 'checked' })).status).toBe(
      200,
    );

    const typeOf = (r: Received) => (JSON.parse(r.body) as { type: string }).type;
    // Every type this issuer's admins and holders raise; the ones an OpenID4VCI wallet raises
    // (a deferred credential, its notifications) are held field by field in oid4vci-deferred.test.ts.
    const raisedHere = WEBHOOK_EVENT_TYPES.filter((t) => !RAISED_BY_WALLETS.includes(t));
    await hook.until((r) => raisedHere.every((t) => r.some((x) => typeOf(x) === t)));

    // What must never appear: the claim values, the envelopes the hosting service stored, every
    // signing key's private part, the signed status list tokens.
    // The envelope's encrypted parts (its other fields are ids that events name too).
    const envelopes = [...issuer.emulator!.state.envelopes.values()].map((e) => JSON.stringify(e.envelope));
    const ring = issuer.ctx.keys.current();
    const privateParts = [...ring.signingKeys, ...ring.partnerKeys].map(
      (k) => (k.privateKey!.export({ format: 'jwk' }) as { d: string }).d,
    );
    const token = await (await fetch(`${issuer.url}/statuslist/0`)).text();
    const forbidden = [
      ...Object.values(claims).map(String),
      'Alice',
      'alice.martin@example.com',
      ...envelopes.flatMap((e) => {
        const { data, iv, authTag, encryptedKey } = JSON.parse(e) as Record<string, string>;
        return [data!, iv!, authTag!, encryptedKey!];
      }),
      ...privateParts,
      token,
    ].filter((v) => v.length >= 4);
    expect(forbidden.length).toBeGreaterThan(10);
    for (const r of hook.received) {
      const event = new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as {
        type: WebhookEventType;
        data: Record<string, unknown>;
      };
      expect(WEBHOOK_EVENT_TYPES).toContain(event.type);
      const allowed: readonly string[] = WEBHOOK_EVENTS[event.type];
      expect(
        Object.keys(event.data).filter((k) => !allowed.includes(k)),
        event.type,
      ).toEqual([]);
      for (const value of forbidden)
        expect(r.body.includes(value), `${event.type} holds ${value}`).toBe(false);
      // No compact JWS or JWE (a credential, a token) either.
      expect(r.body).not.toMatch(/eyJ[\w-]+\.[\w-]*\./);
    }
  });

  it('a change whose event cannot be written does not happen: issuance, status change and their events are one transaction', async () => {
    const issuer = await start();
    await issuer.admin('/admin/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['*'] });
    const issue = (n: string) =>
      issuer.post('/issue-vc', {
        holderDID: `did:example:atomic-${n}`,
        pubKey: generateHolderKeyPair().publicKeyHex,
        userId: 'demo-user-1',
        schemaId: 'membership-v1',
      });
    expect((await issue('before')).status).toBe(201);
    const [before] = await queryStore<{ credential_id: string; revocation_nonce: number }>(
      issuer.ctx.store,
      'SELECT credential_id, revocation_nonce FROM issuances',
    );
    const count = async (table: string) =>
      Number((await queryStore<{ n: number }>(issuer.ctx.store, `SELECT count(*) AS n FROM ${table}`))[0]!.n);
    const events = await count('webhook_events');

    // From now on every event insert fails.
    if (issuer.ctx.store.kind === 'sqlite')
      await queryStore(
        issuer.ctx.store,
        "CREATE TRIGGER refuse_event BEFORE INSERT ON webhook_events BEGIN SELECT RAISE(ABORT, 'no events now'); END",
      );
    else
      await queryStore(
        issuer.ctx.store,
        `CREATE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no events now'; END $$;
         CREATE TRIGGER refuse_event BEFORE INSERT ON webhook_events FOR EACH ROW EXECUTE FUNCTION refuse_event();`,
      );
    expect((await issue('refused')).status).toBeGreaterThanOrEqual(500);
    expect(await count('issuances')).toBe(1);
    expect(
      (await issuer.admin('/admin/revoke', { revocationNonce: String(before!.revocation_nonce) })).status,
    ).toBeGreaterThanOrEqual(500);
    expect(await issuer.ctx.store.issuances.get(before!.credential_id)).toMatchObject({ status: 0 });
    expect(await count('webhook_events')).toBe(events);
  });

  it('retry-failed queues every failed delivery of an endpoint again, with the same webhook-ids', async () => {
    const issuer = await startIssuer({
      env: { WEBHOOK_MAX_ATTEMPTS: '1' },
      context: { webhooks: { baseBackoffMs: 5, maxBackoffMs: 20, sweepMs: 20 } },
    });
    cleanup.push(() => issuer.close());
    const hook = await receiver({ 'credential.issued': [500, 500] });
    cleanup.push(() => hook.close());
    const { id } = (await (
      await issuer.admin('/admin/webhooks', { url: hook.url, events: ['credential.issued'] })
    ).json()) as { id: string };
    for (const n of [1, 2])
      expect(
        (
          await issuer.post('/issue-vc', {
            holderDID: `did:example:outage-${n}`,
            pubKey: generateHolderKeyPair().publicKeyHex,
            userId: 'demo-user-1',
            schemaId: 'membership-v1',
          })
        ).status,
      ).toBe(201);
    const failed = async () =>
      (
        (await (await issuer.admin(`/admin/webhooks/${id}/deliveries?status=failed`)).json()) as {
          deliveries: Array<{ id: string }>;
        }
      ).deliveries.map((d) => d.id);
    await expect.poll(failed).toHaveLength(2);
    const ids = await failed();

    const env = { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY };
    const run = await runCli(['webhooks', 'retry-failed', id], env, issuer.dir);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`${id}: 2 failed deliveries queued again`);
    await hook.until((r) => r.filter((x) => x.answered === 204).length === 2);
    expect(hook.received.filter((x) => x.answered === 204).map((x) => x.headers['webhook-id'])).toEqual(
      expect.arrayContaining(ids),
    );
    expect(await (await issuer.admin(`/admin/webhooks/${id}/retry-failed`, {})).json()).toEqual({
      id,
      retried: 0,
    });
    await expectError(
      await issuer.admin('/admin/webhooks/wh_00000000-0000-0000-0000-000000000000/retry-failed', {}),
      404,
      'NOT_FOUND',
    );
  });

  it('an endpoint pages its deliveries by cursor, newest first, and the CLI walks them all', async () => {
    const issuer = await start();
    const hook = await receiver();
    cleanup.push(() => hook.close());
    const { id } = (await (
      await issuer.admin('/admin/webhooks', { url: hook.url, events: ['credential.issued'] })
    ).json()) as { id: string };
    for (let n = 0; n < 7; n++)
      expect(
        (
          await issuer.post('/issue-vc', {
            holderDID: `did:example:paged-${n}`,
            pubKey: generateHolderKeyPair().publicKeyHex,
            userId: 'demo-user-1',
            schemaId: 'membership-v1',
          })
        ).status,
      ).toBe(201);
    await hook.until((r) => r.length === 7);
    type Page = {
      deliveries: Array<{ id: string; sequence: number }>;
      pagination: { limit: number; nextCursor: string | null };
    };
    const pages: Page[] = [];
    let cursor: string | null = null;
    do {
      const res = await issuer.admin(
        `/admin/webhooks/${id}/deliveries?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      const page = (await res.json()) as Page;
      pages.push(page);
      cursor = page.pagination.nextCursor;
    } while (cursor);
    expect(pages.map((p) => p.deliveries.length)).toEqual([3, 3, 1]);
    const sequences = pages.flatMap((p) => p.deliveries.map((d) => d.sequence));
    expect(sequences).toEqual([...sequences].sort((a, b) => b - a));
    expect(new Set(pages.flatMap((p) => p.deliveries.map((d) => d.id))).size).toBe(7);
    expect(new Set(sequences)).toEqual(
      new Set(hook.received.map((r) => (JSON.parse(r.body) as { sequence: number }).sequence)),
    );

    const env = { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY };
    const all = await runCli(['--json', 'webhooks', 'deliveries', id, '--all'], env, issuer.dir);
    expect(all.code).toBe(0);
    expect((JSON.parse(all.stdout) as { deliveries: unknown[] }).deliveries).toHaveLength(7);
    const first = await runCli(['webhooks', 'deliveries', id, '--limit', '5'], env, issuer.dir);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/next page: --cursor \S+/);

    // A cursor of another route, or no cursor at all, is 400 naming cursor.
    const history = (await (await issuer.admin('/admin/issuance-history?limit=1')).json()) as {
      pagination: { nextCursor: string };
    };
    for (const bad of [history.pagination.nextCursor, 'not-a-cursor'])
      await expectError(
        await issuer.admin(`/admin/webhooks/${id}/deliveries?cursor=${encodeURIComponent(bad)}`),
        400,
        'INVALID_PARAMETER',
        'cursor',
      );
  });

  it('adding, removing, rotating and retrying are audited with the admin key name', async () => {
    const issuer = await start();
    const { id } = (await (
      await issuer.admin('/admin/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['*'] })
    ).json()) as { id: string };
    expect((await issuer.admin(`/admin/webhooks/${id}/rotate-secret`, {})).status).toBe(200);
    expect((await del(issuer, `/admin/webhooks/${id}`)).status).toBe(200);
    const audit = (await (await issuer.admin('/admin/audit?limit=10')).json()) as {
      data: Array<{ actor: string; action: string; target: string }>;
    };
    expect(audit.data.map((a) => [a.action, a.actor, a.target.split(' ')[0]])).toEqual([
      ['webhooks.remove', 'admin', id],
      ['webhooks.rotate-secret', 'admin', id],
      ['webhooks.add', 'admin', id],
    ]);
  });

  it.each([
    [{ url: 'ftp://hooks.example.com/', events: ['*'] }, 'url'],
    [{ url: 'not a url', events: ['*'] }, 'url'],
    [{ url: 'https://hooks.example.com/', events: ['credential.nope'] }, 'events.0'],
    [{ url: 'https://hooks.example.com/', events: [] }, 'events'],
    [{ url: 'https://hooks.example.com/', events: ['*'], secret: 'mine' }, 'secret'],
    [{ events: ['*'] }, 'url'],
  ])('%j is 400 naming %s', async (body, field) => {
    const issuer = await start();
    const res = await issuer.admin('/admin/webhooks', body);
    await expectError(res, 400, 'INVALID_PARAMETER', field);
  });
});

// docs/security.md "Keys shared by several instances": `keys reseal` reseals webhook secrets too.
describe.skipIf(!(await postgresAvailable('the webhook secret reseal test')))(
  'webhook secrets under keys reseal',
  () => {
    it('reseals the current and the previous secret; the restarted issuer signs with both', async () => {
      const OLD = 'c4'.repeat(32);
      const NEW = '5d'.repeat(32);
      const db = await createMigratedDatabase();
      const dir = tempDir();
      const hook = await receiver();
      const context = { webhooks: { baseBackoffMs: 5, maxBackoffMs: 20, sweepMs: 20 } };
      try {
        const before = await startIssuer({
          dir,
          env: { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: OLD },
          context,
        });
        const { id, secret: first } = (await (
          await before.admin('/admin/webhooks', { url: hook.url, events: ['credential.issued'] })
        ).json()) as { id: string; secret: string };
        const { secret } = (await (await before.admin(`/admin/webhooks/${id}/rotate-secret`, {})).json()) as {
          secret: string;
        };
        await before.close();

        const run = await runCli(
          ['keys', 'reseal'],
          { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY_PREVIOUS: OLD, KEY_ENCRYPTION_KEY: NEW },
          dir,
        );
        expect(run.code).toBe(0);
        expect(run.stdout.match(new RegExp(`webhook-secret ${id}`, 'g'))).toHaveLength(2);

        const after = await startIssuer({
          dir,
          env: { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: NEW },
          context,
        });
        try {
          expect(
            (
              await after.post('/issue-vc', {
                holderDID: 'did:example:resealed',
                pubKey: generateHolderKeyPair().publicKeyHex,
                userId: 'demo-user-1',
                schemaId: 'membership-v1',
              })
            ).status,
          ).toBe(201);
          await hook.until((r) => r.length === 1);
          for (const s of [secret, first])
            expect(
              new Webhook(s).verify(
                hook.received[0]!.body,
                hook.received[0]!.headers as Record<string, string>,
              ),
            ).toMatchObject({ type: 'credential.issued' });
        } finally {
          await after.close();
        }
      } finally {
        await hook.close();
        await db.drop();
        removeDir(dir);
      }
    });
  },
);

// docs/operations.md "Webhooks": endpoints are delivered independently; a receiver that does not
// answer holds only its own deliveries.
describe.each([
  ['SQLite', true],
  ['PostgreSQL', await postgresAvailable('independent webhook endpoints on PostgreSQL')],
] as const)('independent webhook endpoints on %s', (engine, available) => {
  it.runIf(available)(
    "an endpoint's events go out while another endpoint's receiver holds its request unanswered",
    async () => {
      const db = engine === 'PostgreSQL' ? await createMigratedDatabase() : undefined;
      const dir = tempDir();
      const hanging = await webhookReceiver('hold');
      const answering = await webhookReceiver('ok');
      // The held request must not time out while the test runs, however slow the machine; and no
      // sweep interval passes in the test, so the second event goes out because the worker looks for
      // new events while it waits for the held answer, not because an interval came round.
      const issuer = await startIssuer({
        dir,
        ...(db ? { env: { DATABASE_URL: db.url } } : {}),
        context: { webhooks: { sweepMs: 3_600_000, deliveryTimeoutMs: 600_000 } },
      });
      try {
        for (const hook of [hanging, answering])
          expect(
            (await issuer.admin('/admin/webhooks', { url: hook.url, events: ['credential.revoked'] })).status,
          ).toBe(201);
        const revoke = async (userId: string) => {
          const issued = await issuer.admin('/admin/issue-vc', {
            userId,
            schemaId: 'membership-v1',
            ...adaMembership(),
          });
          expect(issued.status).toBe(201);
          const { credentialId } = (await issued.json()) as { credentialId: string };
          const record = (await issuer.ctx.store.issuances.get(credentialId))!;
          const res = await issuer.admin('/admin/revoke', {
            revocationNonce: String(record.revocationNonce),
            reason: 'test',
          });
          expect(res.status).toBe(200);
          return credentialId;
        };
        const first = await revoke('first.hold@example.org');
        await hanging.until(() => hanging.held.length === 1);
        await answering.until(() => answering.attempts.some((a) => a.data.credentialId === first));
        // The first event's request to the hanging receiver is still open; the second event
        // reaches the answering receiver meanwhile.
        const second = await revoke('second.hold@example.org');
        await answering.until(() => answering.attempts.some((a) => a.data.credentialId === second));
        const [held] = hanging.held;
        expect(held!.attempt.data.credentialId).toBe(first);
        expect(held!.res.writableEnded).toBe(false);
        expect(held!.res.socket?.destroyed).toBe(false);
        expect(answering.attempts.map((a) => a.answered)).toEqual([204, 204]);
        // The answering endpoint's deliveries are marked delivered while the other's stay pending.
        const endpoints = (await (await issuer.admin('/admin/webhooks')).json()) as {
          webhooks: Array<{ id: string; url: string }>;
        };
        const idOf = (url: string) => endpoints.webhooks.find((w) => w.url === url)!.id;
        await expect
          .poll(async () => {
            const page = (await (
              await issuer.admin(`/admin/webhooks/${idOf(answering.url)}/deliveries?status=delivered`)
            ).json()) as { deliveries: unknown[] };
            return page.deliveries.length;
          })
          .toBe(2);
        const pending = (await (
          await issuer.admin(`/admin/webhooks/${idOf(hanging.url)}/deliveries?status=pending`)
        ).json()) as { deliveries: unknown[] };
        expect(pending.deliveries.length).toBeGreaterThanOrEqual(1);
      } finally {
        hanging.cut();
        await issuer.close();
        await hanging.close();
        await answering.close();
        await db?.drop();
        removeDir(dir);
      }
    },
  );
});

// docs/operations.md "Webhooks": `status_list.published` follows a status change, whether or not
// anyone reads the list.
describe.each([
  ['SQLite', true],
  ['PostgreSQL', await postgresAvailable('status_list.published on PostgreSQL')],
] as const)('status_list.published after a status change on %s', (engine, available) => {
  it.runIf(available)(
    'a revoke re-signs its partition at once when an endpoint subscribes, unread',
    async () => {
      const db = engine === 'PostgreSQL' ? await createMigratedDatabase() : undefined;
      const dir = tempDir();
      const hook = await webhookReceiver('ok');
      const issuer = await startIssuer({ dir, ...(db ? { env: { DATABASE_URL: db.url } } : {}) });
      try {
        const added = await issuer.admin('/admin/webhooks', {
          url: hook.url,
          events: ['status_list.published'],
        });
        hook.setSecret(((await added.json()) as { secret: string }).secret);
        const issued = await issuer.admin('/admin/issue-vc', {
          userId: 'published.after@example.org',
          schemaId: 'membership-v1',
          ...adaMembership(),
        });
        expect(issued.status).toBe(201);
        const { credentialId } = (await issued.json()) as { credentialId: string };
        const record = (await issuer.ctx.store.issuances.get(credentialId))!;
        const before = hook.attempts.length;
        const res = await issuer.admin('/admin/revoke', {
          revocationNonce: String(record.revocationNonce),
          reason: 'test',
        });
        expect(res.status).toBe(200);
        // Nobody reads /statuslist: the event comes from the change itself.
        await hook.until(() => hook.attempts.length > before);
        const event = hook.attempts[before]!;
        expect(event).toMatchObject({
          type: 'status_list.published',
          valid: true,
          data: {
            partition: record.statusSlot!.partition,
            uri: `${issuer.url}/statuslist/${record.statusSlot!.partition}`,
          },
        });
      } finally {
        await issuer.close();
        await hook.close();
        await db?.drop();
        removeDir(dir);
      }
    },
  );
});
