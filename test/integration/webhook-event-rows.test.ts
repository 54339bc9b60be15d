import { describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { WEBHOOK_EVENTS, type WebhookEventType } from '../../src/events/catalogue.js';
import { ADA_CLAIMS, adaMembership } from '../helpers/direct-issue.js';
import { queryStore, removeDir, startIssuer, tempDir } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable } from '../helpers/services.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

// docs/operations.md "Webhooks": the rows of webhook_events (type, data) are the same on both
// engines, each `data` the JSON its builder in src/events makes (its fields in the order of
// WEBHOOK_EVENTS, compact), whichever statement wrote it (a PostgreSQL function included).
describe.each([
  ['SQLite', true],
  ['PostgreSQL', await postgresAvailable('webhook event rows on PostgreSQL')],
] as const)('webhook event rows on %s', (engine, available) => {
  it.runIf(available)(
    'issue, deliver, give up an upload, renew, suspend, unsuspend, revoke, rotate and declare a key compromised',
    async () => {
      const db = engine === 'PostgreSQL' ? await createMigratedDatabase() : undefined;
      const dir = tempDir();
      const hook = await webhookReceiver('ok');
      const issuer = await startIssuer({
        dir,
        // Two status bits: suspend and unsuspend too.
        env: { STATUS_LIST_BITS: '2', ...(db ? { DATABASE_URL: db.url } : {}) },
        context: { webhooks: { baseBackoffMs: 5, maxBackoffMs: 20, sweepMs: 20 } },
      });
      try {
        expect((await issuer.admin('/admin/webhooks', { url: hook.url, events: ['*'] })).status).toBe(201);
        const seen = (type: string, check: (d: Record<string, unknown>) => boolean = () => true) =>
          hook.until(() => hook.attempts.some((a) => a.type === type && check(a.data)));

        const direct = await issuer.admin('/admin/issue-vc', {
          userId: 'rows@example.org',
          schemaId: 'membership-v1',
          ...adaMembership(),
        });
        expect(direct.status).toBe(201);
        const { credentialId: directId } = (await direct.json()) as { credentialId: string };
        const hosted = await issuer.post('/issue-vc', {
          holderDID: 'did:example:rows',
          pubKey: generateHolderKeyPair().publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
        });
        expect(hosted.status).toBe(201);
        const hostedId = (
          await queryStore<{ credential_id: string }>(
            issuer.ctx.store,
            "SELECT credential_id FROM issuances WHERE holder_did = 'did:example:rows'",
          )
        )[0]!.credential_id;
        await seen('credential.delivered', (d) => d.credentialId === hostedId);

        issuer.emulator!.faults.failNext('dstorage', 3, 400);
        // Refused for good by the hosting service (its answer to this request is not the point here).
        await issuer.post('/issue-vc', {
          holderDID: 'did:example:rows-refused',
          pubKey: generateHolderKeyPair().publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
        });
        await seen('credential.delivery_failed');

        const directRecord = (await issuer.ctx.store.issuances.get(directId))!;
        await issuer.ctx.store.claims.upsertClaims([
          {
            userId: directRecord.userId!,
            schemaId: 'membership-v1',
            claims: ADA_CLAIMS,
            expiresAt: null,
          },
        ]);
        expect(
          (await issuer.admin('/admin/renew', { credentialId: directId, reason: 'checked' })).status,
        ).toBe(201);
        const nonce = directRecord.revocationNonce;
        for (const change of ['suspend', 'unsuspend', 'revoke'])
          expect(
            (await issuer.admin(`/admin/${change}`, { revocationNonce: String(nonce), reason: 'checked' }))
              .status,
          ).toBe(200);
        const firstKid = issuer.ctx.keys.current().signing.kid;
        expect((await issuer.admin('/admin/keys/rotate', { purpose: 'credential-signing' })).status).toBe(
          200,
        );
        const secondKid = issuer.ctx.keys.current().signing.kid;
        expect(
          (await issuer.admin('/admin/keys/compromised', { kid: firstKid, reason: 'checked' })).status,
        ).toBe(200);
        // The compromise's bulk job revokes what the key signed: the hosted credential among them.
        await seen('credential.revoked', (d) => d.credentialId === hostedId);

        const rows = await queryStore<{ type: WebhookEventType; data: string }>(
          issuer.ctx.store,
          'SELECT type, data FROM webhook_events ORDER BY seq',
        );
        const events = rows.map((r) => ({
          type: r.type,
          data: JSON.parse(r.data) as Record<string, unknown>,
        }));
        for (const [i, e] of events.entries()) {
          // The builder's JSON: compact, its fields in the catalogue's order.
          expect(rows[i]!.data, e.type).toBe(JSON.stringify(e.data));
          const order: readonly string[] = WEBHOOK_EVENTS[e.type];
          expect(Object.keys(e.data), e.type).toEqual(order.filter((f) => f in e.data));
        }
        const of = (type: WebhookEventType, credentialId?: string) =>
          events
            .filter((e) => e.type === type && (!credentialId || e.data.credentialId === credentialId))
            .map((e) => e.data);
        const hostedRecord = (await issuer.ctx.store.issuances.get(hostedId))!;
        expect(of('credential.issued', hostedId)).toEqual([
          {
            credentialId: hostedId,
            schemaId: 'membership-v1',
            proofType: hostedRecord.proofType,
            channel: 'hosted',
            holderDid: 'did:example:rows',
            revocationNonce: hostedRecord.revocationNonce,
            status: {
              uri: `${issuer.url}/statuslist/${hostedRecord.statusSlot!.partition}`,
              idx: hostedRecord.statusSlot!.index,
            },
            expiresAt: hostedRecord.expiresAt.toISOString(),
          },
        ]);
        expect(of('credential.delivered', hostedId)).toEqual([
          { credentialId: hostedId, storagePath: hostedRecord.storagePath, attempts: 1 },
        ]);
        expect(of('credential.delivery_failed')).toEqual([
          { credentialId: expect.any(String), attempts: 3, lastError: expect.any(String) },
        ]);
        const renewed = of('credential.renewed');
        expect(renewed).toEqual([
          { credentialId: expect.any(String), renewedFrom: directId, schemaId: 'membership-v1' },
        ]);
        const single = {
          credentialId: directId,
          revocationNonce: nonce,
          actor: expect.any(String),
          reason: 'checked',
        };
        expect(of('credential.suspended')).toEqual([single]);
        expect(of('credential.unsuspended')).toEqual([single]);
        expect(of('credential.revoked', directId)).toEqual([single]);
        expect(of('credential.revoked', hostedId)).toEqual([
          {
            credentialId: hostedId,
            revocationNonce: hostedRecord.revocationNonce,
            actor: expect.any(String),
            reason: 'checked',
            jobId: expect.any(String),
          },
        ]);
        expect(of('key.rotated')).toContainEqual({
          purpose: 'credential-signing',
          kid: secondKid,
          retiredKid: firstKid,
        });
        expect(of('key.compromised')).toEqual([
          { kid: firstKid, actor: expect.any(String), reason: 'checked' },
        ]);
        expect(of('status_list.published')).toContainEqual({
          partition: 0,
          uri: `${issuer.url}/statuslist/0`,
        });
      } finally {
        await issuer.close();
        await hook.close();
        removeDir(dir);
        await db?.drop();
      }
    },
  );
});
