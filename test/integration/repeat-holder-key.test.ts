import { ECDH } from 'node:crypto';
import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import type { UploadBody } from '../../src/store/store.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const postgres = await postgresAvailable('repeated issue-vc with a new holder key on PostgreSQL');
const engines = postgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

// docs/interface.md "Decisions where the hosting service's interface is silent": a repeated
// `/issue-vc` is the same issuance only when it names the same holder keys too; a 201 always means
// the key sent can open what the hosting service stored.
describe.each(engines)('repeated issue-vc with a new holder key (%s)', (engine) => {
  let issuer: TestIssuer;
  let db: TempDatabase | undefined;
  let n = 0;

  beforeAll(async () => {
    db = engine === 'postgres' ? await createMigratedDatabase() : undefined;
    issuer = await startIssuer(db ? { env: { DATABASE_URL: db.url } } : {});
  });
  afterAll(async () => {
    await issuer.close();
    await db?.drop();
  });

  const request = (holderDID: string, keys: Record<string, unknown>) => ({
    holderDID,
    userId: 'demo-user-2',
    schemaId: 'membership-v1',
    ...keys,
  });
  const storedFor = (holderDid: string): UploadBody[] =>
    issuer.emulator!.state.envelopesOf(holderDid).map((s) => s.envelope as UploadBody);
  /** Sends `/issue-vc` and answers the envelopes it added to the hosting service's storage. */
  const issue = async (body: Record<string, unknown>): Promise<UploadBody[]> => {
    const before = new Set(storedFor(body.holderDID as string).map((e) => e.externalId));
    const res = await issuer.post('/issue-vc', body);
    expect(res.status).toBe(201);
    return storedFor(body.holderDID as string).filter((e) => !before.has(e.externalId));
  };
  const opens = (key: ReturnType<typeof generateHolderKeyPair>, envelope: UploadBody): boolean => {
    try {
      return typeof openEnvelope(key.privateKey, envelope) === 'string';
    } catch {
      return false;
    }
  };

  it('a new pubKey gets a new credential its private key opens; the old key still opens the first', async () => {
    const did = `did:example:repeat-${engine}-${n++}`;
    const first = generateHolderKeyPair('x25519');
    const second = generateHolderKeyPair('x25519');
    const [original] = await issue(request(did, { pubKey: first.publicKeyHex }));
    expect(original).toBeDefined();
    const added = await issue(request(did, { pubKey: second.publicKeyHex }));
    expect(added).toHaveLength(1);
    expect(added[0]!.externalId).not.toBe(original!.externalId);
    expect(opens(second, added[0]!)).toBe(true);
    expect(opens(first, added[0]!)).toBe(false);
    expect(opens(first, original!)).toBe(true);
    expect(storedFor(did)).toHaveLength(2);
  });

  it('the same key repeated is still one credential', async () => {
    const did = `did:example:repeat-${engine}-${n++}`;
    const key = generateHolderKeyPair('x25519');
    const [original] = await issue(request(did, { pubKey: key.publicKeyHex }));
    expect(await issue(request(did, { pubKey: key.publicKeyHex }))).toEqual([]);
    // The same key given as encryptionKey (beside another pubKey, which it wins over).
    const other = generateHolderKeyPair('x25519');
    expect(
      await issue(request(did, { pubKey: other.publicKeyHex, encryptionKey: key.publicKeyHex })),
    ).toEqual([]);
    // Several at once: one credential still.
    const repeats = await Promise.all(
      Array.from({ length: 4 }, () => issuer.post('/issue-vc', request(did, { pubKey: key.publicKeyHex }))),
    );
    expect(repeats.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(storedFor(did).map((e) => e.externalId)).toEqual([original!.externalId]);
  });

  it('a new encryptionKey gets a new credential its private key opens', async () => {
    const did = `did:example:repeat-${engine}-${n++}`;
    const pub = generateHolderKeyPair('x25519');
    const first = generateHolderKeyPair('p256');
    const second = generateHolderKeyPair('p256');
    const [original] = await issue(
      request(did, { pubKey: pub.publicKeyHex, encryptionKey: first.publicKeyHex }),
    );
    const added = await issue(request(did, { pubKey: pub.publicKeyHex, encryptionKey: second.publicKeyHex }));
    expect(added).toHaveLength(1);
    expect(opens(second, added[0]!)).toBe(true);
    expect(opens(first, original!)).toBe(true);
    // And back to pubKey alone: that key has no credential yet, so it gets one too.
    const third = await issue(request(did, { pubKey: pub.publicKeyHex }));
    expect(third).toHaveLength(1);
    expect(opens(pub, third[0]!)).toBe(true);
    expect(storedFor(did)).toHaveLength(3);
  });

  it('the same EC key sent compressed is the same key', async () => {
    const did = `did:example:repeat-${engine}-${n++}`;
    const key = generateHolderKeyPair('p256');
    const [original] = await issue(request(did, { encryptionKey: key.publicKeyHex }));
    // SPKI of the compressed point: the P-256 header for 33-byte points, then the point.
    const spki = Buffer.from(key.publicKeyHex, 'hex');
    const compressed = ECDH.convertKey(
      spki.subarray(spki.length - 65),
      'prime256v1',
      undefined,
      undefined,
      'compressed',
    ) as Buffer;
    const compressedHex = `3039301306072a8648ce3d020106082a8648ce3d030107032200${compressed.toString('hex')}`;
    expect(await issue(request(did, { encryptionKey: compressedHex }))).toEqual([]);
    expect(storedFor(did).map((e) => e.externalId)).toEqual([original!.externalId]);
  });

  it('a new signingKey gets a new credential bound to it', async () => {
    const did = `did:example:repeat-${engine}-${n++}`;
    const key = generateHolderKeyPair('x25519');
    const binding = async () => exportJWK((await generateKeyPair('ES256', { extractable: true })).publicKey);
    const firstJwk = await binding();
    const secondJwk = await binding();
    const [original] = await issue(request(did, { pubKey: key.publicKeyHex, signingKey: { jwk: firstJwk } }));
    expect(await issue(request(did, { pubKey: key.publicKeyHex, signingKey: { jwk: firstJwk } }))).toEqual(
      [],
    );
    const added = await issue(request(did, { pubKey: key.publicKeyHex, signingKey: { jwk: secondJwk } }));
    expect(added).toHaveLength(1);
    const cnfOf = (e: UploadBody) =>
      (decodeJwt((openEnvelope(key.privateKey, e) as string).split('~')[0]!).cnf as { jwk: { x: string } })
        .jwk.x;
    expect(cnfOf(original!)).toBe(firstJwk.x);
    expect(cnfOf(added[0]!)).toBe(secondJwk.x);
  });
});
