import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import {
  type InstanceProcess,
  liveJwks,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { removeDir, TEST_ADMIN_API_KEY, TEST_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
import {
  createTempDatabase,
  postgresAvailable,
  redisAvailable,
  type TempDatabase,
} from '../helpers/services.js';
import { newSoftHsmToken, softHsmAvailable } from '../helpers/softhsm.js';

const available =
  softHsmAvailable('the PKCS#11 two-instance test') &&
  (await postgresAvailable('the PKCS#11 two-instance test')) &&
  (await redisAvailable('the PKCS#11 two-instance test'));

const holder = generateHolderKeyPair('x25519');

// docs/security.md "Keys in a hardware security module", "Several instances": two real server
// processes on one PostgreSQL database share one token (as instances share a network HSM). Their
// first starts agree on one set of token keys; a rotation through A is signed with by B once B's
// key poll reloads the ring, B finding the new object in the token by its CKA_ID.
describe.skipIf(!available)('two instances on PostgreSQL sharing one PKCS#11 token', () => {
  const token = available ? newSoftHsmToken() : undefined;
  let db: TempDatabase;
  let emulator: EmulatorServer;
  const instances: InstanceProcess[] = [];
  const dirs = [tempDir(), tempDir()];

  beforeAll(async () => {
    db = await createTempDatabase();
    emulator = await startEmulatorServer({ partnerId: TEST_PARTNER_ID, jwks: () => liveJwks(instances) });
    for (const dir of dirs)
      instances.push(
        await startInstanceProcess({ databaseUrl: db.url, serviceUrl: emulator.url, dir, env: token!.env }),
      );
  });
  afterAll(async () => {
    await stopInstanceProcesses(instances);
    await emulator?.close();
    await db?.drop();
    for (const d of dirs) removeDir(d);
  });

  const issue = async (i: InstanceProcess, holderDid: string) => {
    const res = await fetch(`${i.url}/issue-vc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
      body: JSON.stringify({
        holderDID: holderDid,
        pubKey: holder.publicKeyHex,
        userId: 'demo-user-1',
        schemaId: 'membership-v1',
        proofType: 'SD_JWT_VC',
      }),
    });
    expect(res.status).toBe(201);
    const stored = [...emulator.emulator.state.envelopes.values()].find(
      (e) => e.envelope.holderDid === holderDid,
    )!;
    return decodeProtectedHeader((openEnvelope(holder.privateKey, stored.envelope) as string).split('~')[0]!)
      .kid;
  };
  const published = async (i: InstanceProcess) =>
    (
      (await (await fetch(`${i.url}/.well-known/jwt-vc-issuer`)).json()) as {
        jwks: { keys: { kid: string }[] };
      }
    ).jwks.keys.map((k) => k.kid);

  it('a rotation through A is published and signed with by B', async () => {
    const [a, b] = instances as [InstanceProcess, InstanceProcess];
    const first = await issue(a, 'did:example:shared-a');
    expect(await issue(b, 'did:example:shared-b')).toBe(first);

    const res = await fetch(`${a.url}/admin/keys/rotate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY },
      body: JSON.stringify({ purpose: 'credential-signing' }),
    });
    expect(res.status).toBe(200);
    const created = ((await res.json()) as { created: { kid: string } }).created.kid;
    expect(created).not.toBe(first);
    await expect.poll(() => published(b)).toEqual(expect.arrayContaining([first, created]));
    let n = 0;
    await expect.poll(() => issue(b, `did:example:after-${n++}`)).toBe(created);
    expect(await issue(a, 'did:example:after-a')).toBe(created);
  });
});
