import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import { UploadOutbox } from '../../src/issuance/outbox.js';
import type { IssuanceRecord } from '../../src/store/store.js';
import { expectError } from '../helpers/errors.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';

// docs/several-instances.md "Storage engines": an issuance is committed before its upload and never lost to an upstream failure.
describe('durable uploads', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('retries a failed upload with the same externalId until it is stored once', async () => {
    const issuer = await startIssuer();
    cleanup.push(() => issuer.close());
    const emulator = issuer.emulator!;
    emulator.faults.failNext('dstorage', 2, 500);
    const holder = generateHolderKeyPair();
    const uploaded = once(issuer.ctx.outbox, 'uploaded');

    const res = await issuer.post('/issue-vc', {
      holderDID: 'did:example:retry',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    // The in-request attempt failed: 502, but the issuance is recorded and retried in the background.
    await expectError(res, 502, 'UPSTREAM_UNAVAILABLE');

    const [record] = (await uploaded) as [IssuanceRecord];
    const requests = emulator.state.requests.filter((r) => r.route === 'dstorage');
    expect(requests.map((r) => r.status)).toEqual([500, 500, 201]);
    expect(new Set(requests.map((r) => r.externalId))).toEqual(new Set([record.credentialId]));
    expect(new Set(requests.map((r) => r.idempotencyKey))).toEqual(new Set([record.credentialId]));
    expect(emulator.state.envelopes.size).toBe(1);
    const stored = await issuer.ctx.store.issuances.get(record.credentialId);
    expect(stored).toMatchObject({ uploadState: 'uploaded', uploadAttempts: 3 });

    // The hosting service repeats the request: the same issuance, now stored, answers 201.
    const again = await issuer.post('/issue-vc', {
      holderDID: 'did:example:retry',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    expect(again.status).toBe(201);
    expect(emulator.state.envelopes.size).toBe(1);
  });

  it('a second outbox on the same store takes a due upload it did not create, told nothing', async () => {
    const issuer = await startIssuer();
    cleanup.push(() => issuer.close());
    // The issuing instance's worker stops, as if the instance had died after its request's attempt.
    await issuer.ctx.outbox.stop();
    const other = new UploadOutbox(issuer.ctx.store.issuances, issuer.ctx.serviceClient, {
      baseBackoffMs: 5,
      maxBackoffMs: 50,
      sweepMs: 20,
    });
    // Joins with nothing pending: only its sweep can find the upload recorded next.
    await other.start({ recover: false });
    cleanup.push(() => other.stop());
    const uploaded = once(other, 'uploaded');

    issuer.emulator!.faults.failNext('dstorage', 1, 503);
    const res = await issuer.post('/issue-vc', {
      holderDID: 'did:example:swept',
      pubKey: generateHolderKeyPair().publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    await expectError(res, 502, 'UPSTREAM_UNAVAILABLE');

    const [record] = (await uploaded) as [IssuanceRecord];
    expect(issuer.emulator!.state.envelopes.has(record.credentialId)).toBe(true);
    expect(issuer.emulator!.state.envelopes.size).toBe(1);
    expect(await issuer.ctx.store.issuances.get(record.credentialId)).toMatchObject({
      uploadState: 'uploaded',
      uploadAttempts: 2,
    });
  });

  it('a restart resumes a pending upload (stopped mid-outage)', async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    let current: TestIssuer | undefined;
    // A standalone hosting service that outlives the issuer process; it trusts the issuer's key files.
    const service = await startEmulatorServer({
      jwks: async () => ({ keys: current!.ctx.keys.current().partnerKeys.map((k) => k.publicJwk) }),
    });
    cleanup.push(() => service.close());
    const env = { SERVICE_V1_BASE_URL: service.url };

    current = await startIssuer({ dir, env });
    service.emulator.faults.failNext('dstorage', 1_000_000, 503);
    const holder = generateHolderKeyPair();
    const res = await current.post('/issue-vc', {
      holderDID: 'did:example:restart',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    expect(res.status).toBe(502);
    expect(await current.ctx.store.issuances.countPendingUploads()).toBe(1);
    await current.close();

    service.emulator.faults.clear();
    let uploaded: Promise<unknown> | undefined;
    current = await startIssuer({
      dir,
      env,
      port: Number(new URL(current.url).port),
      beforeServe: (ctx) => {
        uploaded = once(ctx.outbox, 'uploaded');
      },
    });
    cleanup.push(() => current!.close());
    await uploaded;
    expect(await current.ctx.store.issuances.countPendingUploads()).toBe(0);
    const stored = [...service.emulator.state.envelopes.values()];
    expect(stored).toHaveLength(1);
    const compact = openEnvelope(holder.privateKey, stored[0]!.envelope) as string;
    const verified = await verifySdJwtVc(current.url, compact);
    expect((verified.payload as { sub: string }).sub).toBe('did:example:restart');
  });
});
