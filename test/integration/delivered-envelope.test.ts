import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import type { IssuanceRecord, UploadBody } from '../../src/store/store.js';
import { expectError } from '../helpers/errors.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const postgres = await postgresAvailable('delivered envelopes on PostgreSQL');
const engines = postgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

const sha256Hex = (base64: string) =>
  createHash('sha256').update(Buffer.from(base64, 'base64')).digest('hex');

// docs/architecture.md "Envelopes once delivered": once the hosting service stored an envelope,
// the record keeps it without its ciphertext, with the ciphertext's SHA-256; what still needs the
// envelope (a failed upload's retry) has it, and a repeat still answers.
describe.each(engines)('delivered envelopes (%s)', (engine) => {
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
  /** What the record keeps of what was stored upstream (the upload adds `proofType`). */
  const delivered = (upstream: UploadBody) => {
    const { data, proofType: _sent, ...rest } = upstream as UploadBody & { proofType?: string };
    return { ...rest, dataSha256: sha256Hex(data) };
  };

  beforeAll(async () => {
    db = engine === 'postgres' ? await createTempDatabase() : undefined;
    issuer = await startIssuer({
      env: { UPLOAD_MAX_ATTEMPTS: '3', ...(db ? { DATABASE_URL: db.url } : {}) },
    });
  });
  afterAll(async () => {
    await issuer.close();
    await db?.drop();
  });

  it('keeps the envelope without its ciphertext once stored upstream, with the SHA-256 of what was stored', async () => {
    const did = `did:example:delivered-${engine}`;
    expect((await issue(did)).status).toBe(201);
    const [upstream] = storedUpstream(did);
    expect(typeof openEnvelope(holder.privateKey, upstream!)).toBe('string');
    const record = await issuer.ctx.store.issuances.get(upstream!.externalId);
    expect(record?.uploadState).toBe('uploaded');
    expect(record!.envelope).toEqual(delivered(upstream!));
    expect(record!.envelope).not.toHaveProperty('data');

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
    expect(typeof openEnvelope(holder.privateKey, kept!.envelope as UploadBody)).toBe('string');

    issuer.emulator!.faults.clear();
    const uploaded = once(issuer.ctx.outbox, 'uploaded');
    const retried = await issuer.admin('/admin/uploads/retry', { credentialId: failed.credentialId });
    expect(retried.status).toBe(200);
    await uploaded;
    const [upstream] = storedUpstream(did);
    expect(typeof openEnvelope(holder.privateKey, upstream!)).toBe('string');
    const after = await issuer.ctx.store.issuances.get(failed.credentialId);
    expect(after?.uploadState).toBe('uploaded');
    expect(after!.envelope).toEqual(delivered(upstream!));
  });
});
