import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
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

const available =
  (await postgresAvailable('the three-process test')) && (await redisAvailable('the three-process test'));

const holder = generateHolderKeyPair('x25519');

// Three real server processes (src/main.ts) on one PostgreSQL database and one Redis,
// an emulator that fails uploads, issuance, revocation and rotation through different instances
// at once, one instance SIGKILLed mid-burst; then the database and the emulator are checked.
describe.skipIf(!available)('three server processes on one PostgreSQL database', () => {
  let db: TempDatabase;
  let emulator: EmulatorServer;
  const instances: InstanceProcess[] = [];
  const dirs = [tempDir(), tempDir(), tempDir()];

  // A short upload lease and sweep: the dead instance's leases run out in seconds rather than the
  // default minute, which the test would otherwise spend waiting.
  const env = { UPLOAD_LEASE_MS: '3000', OUTBOX_SWEEP_MS: '200' };
  const start = (dir: string) =>
    startInstanceProcess({ databaseUrl: db.url, serviceUrl: emulator.url, dir, env });

  beforeAll(async () => {
    db = await createTempDatabase();
    // The emulator checks partner JWTs against the keys any live instance publishes.
    emulator = await startEmulatorServer({
      partnerId: TEST_PARTNER_ID,
      jwks: () => liveJwks(instances),
    });
    // Three first starts at the same moment, each with its own empty KEYS_DIR and no shared disk:
    // they agree through the database on one set of keys, the Iden3 BJJ key included.
    instances.push(...(await Promise.all(dirs.map(start))));
  });

  afterAll(async () => {
    await stopInstanceProcesses(instances);
    await emulator?.close();
    await db?.drop();
    for (const d of dirs) removeDir(d);
  });

  const post = (i: InstanceProcess, path: string, body: unknown, admin = false) =>
    fetch(`${i.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(admin ? { 'x-admin-api-key': TEST_ADMIN_API_KEY } : { 'x-api-key': TEST_API_KEY }),
      },
      body: JSON.stringify(body),
    });

  it('three first starts at the same moment serve one Iden3 issuer DID, with no key file', async () => {
    const dids = await Promise.all(
      instances.map(async (i) => {
        const doc = (await (await fetch(`${i.url}/.well-known/did.json`)).json()) as {
          alsoKnownAs?: string[];
        };
        return doc.alsoKnownAs?.[0];
      }),
    );
    expect(dids[0]).toMatch(/^did:iden3:/);
    expect(new Set(dids).size).toBe(1);
    for (const dir of dirs) expect(existsSync(join(dir, 'keys', 'iden3-bjj.json'))).toBe(false);
  });

  it('no lost issuance, no duplicate index or nonce, every envelope stored once, revocations and rotation seen everywhere', async () => {
    const [a, b, c] = instances as [InstanceProcess, InstanceProcess, InstanceProcess];
    emulator.emulator.faults.failNext('dstorage', 10, 503);

    const hosted = Array.from({ length: 30 }, (_, n) => `did:example:burst-${n}`);
    const emails = Array.from({ length: 12 }, (_, n) => `burst.${n}@example.org`);
    const through = (n: number) => instances[n % 3]!;
    const answers = new Map<string, number | 'cut'>();
    const direct = new Map<string, string>();
    // Mid-burst (a third of the answers in, the rest in flight): C dies without a chance to clean up.
    const answered = (key: string, status: number | 'cut') => {
      answers.set(key, status);
      if (answers.size >= 14 && !c.child.killed) c.child.kill('SIGKILL');
    };

    const burst = [
      ...hosted.map(async (holderDid, n) => {
        const res = await post(through(n), '/issue-vc', {
          holderDID: holderDid,
          pubKey: holder.publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
          proofType: 'SD_JWT_VC',
        }).catch(() => undefined);
        answered(holderDid, res?.status ?? 'cut');
      }),
      ...emails.map(async (email, n) => {
        const res = await post(
          through(n + 1),
          '/admin/issue-vc',
          {
            userId: email,
            schemaId: 'membership-v1',
            vct: 'urn:vct:membership',
            expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
            credentialSubject: {
              givenName: 'B',
              familyName: 'Urst',
              memberSince: '2022-01-01',
              tier: 'basic',
              memberNumber: n + 1,
            },
          },
          true,
        ).catch(() => undefined);
        answered(email, res?.status ?? 'cut');
        if (res?.status === 201)
          direct.set(email, ((await res.json()) as { credentialId: string }).credentialId);
      }),
    ];
    // Mid-burst: a rotation through B.
    const rotation = post(b, '/admin/keys/rotate', { purpose: 'credential-signing' }, true);
    await Promise.all(burst);
    if (c.child.exitCode === null && c.child.signalCode === null) await once(c.child, 'exit');
    expect(c.child.signalCode).toBe('SIGKILL');
    // The emulator failed uploads during the burst (retried by the outboxes since).
    expect(emulator.emulator.state.requests.filter((r) => r.status === 503).length).toBeGreaterThan(0);
    const rotated = await rotation;
    expect(rotated.status).toBe(200);
    const newKid = ((await rotated.json()) as { created: { kid: string } }).created.kid;

    // Rotation: A publishes the new key at its next key poll.
    const publishedByA = async () => {
      const meta = (await (await fetch(`${a.url}/.well-known/jwt-vc-issuer`)).json()) as {
        jwks: { keys: Array<{ kid: string }> };
      };
      return meta.jwks.keys.map((k) => k.kid);
    };
    await expect.poll(publishedByA, { interval: 50 }).toContain(newKid);

    // Every answered issuance is recorded; the survivors' outboxes finish every pending upload,
    // the dead instance's leases included once they expire.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const notUploaded = async () =>
        (
          await client.query<{ n: string }>(
            "SELECT count(*) AS n FROM issuances WHERE upload_state <> 'uploaded'",
          )
        ).rows[0]!.n;
      // The test's own timeout bounds this: the outboxes' retries and the dead lease's expiry run
      // on their own time.
      await expect.poll(notUploaded, { interval: 250, timeout: 500_000 }).toBe('0');
      const { rows } = await client.query<{
        credential_id: string;
        holder_did: string;
        revocation_nonce: string;
        status_partition: number;
        status_index: number;
      }>('SELECT credential_id, holder_did, revocation_nonce, status_partition, status_index FROM issuances');
      // No duplicate index or nonce.
      expect(new Set(rows.map((r) => r.revocation_nonce)).size).toBe(rows.length);
      expect(new Set(rows.map((r) => `${r.status_partition}:${r.status_index}`)).size).toBe(rows.length);
      // No lost issuance: each 201 (and each 502: recorded, then retried) has its record.
      const recordedHolders = new Set(rows.map((r) => r.holder_did));
      for (const holderDid of hosted) {
        const status = answers.get(holderDid);
        if (status === 201 || status === 502) expect(recordedHolders.has(holderDid)).toBe(true);
      }
      for (const id of direct.values()) expect(rows.some((r) => r.credential_id === id)).toBe(true);
      // Every recorded envelope stored upstream, once (one stored envelope per externalId).
      const stored = emulator.emulator.state.envelopes;
      for (const r of rows) expect(stored.has(r.credential_id)).toBe(true);
      expect(stored.size).toBe(rows.length);
      expect(answers.size).toBe(hosted.length + emails.length);

      // Revocations through A are visible on B at once.
      const revoked = rows.slice(0, 5);
      for (const r of revoked)
        expect((await post(a, '/admin/revoke', { revocationNonce: r.revocation_nonce }, true)).status).toBe(
          200,
        );
      for (const r of revoked) {
        const res = await fetch(`${b.url}/revocation-status/${r.revocation_nonce}`);
        expect(await res.json()).toMatchObject({ isRevoked: true });
      }
    } finally {
      await client.end();
    }
  });
});
