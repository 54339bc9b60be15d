import { cpSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import {
  type InstanceProcess,
  liveJwks,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { removeDir, TEST_ADMIN_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
import {
  createTempDatabase,
  postgresAvailable,
  redisAvailable,
  type TempDatabase,
} from '../helpers/services.js';

const available =
  (await postgresAvailable('the renewal sweep across processes')) &&
  (await redisAvailable('the renewal sweep across processes'));

const SCHEMA = 'renewing-v1';
const COUNT = 12;

// docs/operations.md "Renewal": two real server processes on one PostgreSQL database, both
// sweeping every 100 ms; every credential inside the window is renewed exactly once.
describe.skipIf(!available)('the renewal sweep in two server processes on one PostgreSQL database', () => {
  let db: TempDatabase;
  let emulator: EmulatorServer;
  const instances: InstanceProcess[] = [];
  const dirs = [tempDir(), tempDir()];
  const work = tempDir();

  beforeAll(async () => {
    db = await createTempDatabase();
    emulator = await startEmulatorServer({ partnerId: TEST_PARTNER_ID, jwks: () => liveJwks(instances) });
    const schemas = join(work, 'schemas');
    cpSync(resolve('schemas'), schemas, { recursive: true });
    writeFileSync(
      join(schemas, 'renewing.json'),
      JSON.stringify({
        schemaId: SCHEMA,
        proofTypes: ['SD_JWT_VC'],
        credentialSubject: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        claims: { provider: 'sqlite' },
        renewal: { beforeExpirySeconds: 30 * 86_400 },
      }),
    );
    const env = { SCHEMAS_DIR: schemas, RENEWAL_SWEEP_INTERVAL_MS: '100' };
    // One first, so the second finds its keys in the database.
    instances.push(
      await startInstanceProcess({ databaseUrl: db.url, serviceUrl: emulator.url, dir: dirs[0]!, env }),
    );
    instances.push(
      await startInstanceProcess({ databaseUrl: db.url, serviceUrl: emulator.url, dir: dirs[1]!, env }),
    );
  });
  afterAll(async () => {
    await stopInstanceProcesses(instances);
    await emulator?.close();
    await db?.drop();
    for (const d of [...dirs, work]) removeDir(d);
  });

  const admin = async (i: InstanceProcess, path: string, body?: unknown) => {
    const res = await fetch(`${i.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const renewedBy = async (i: InstanceProcess) => {
    const page = await admin(i, '/admin/issuance-history?limit=100');
    return new Map(
      (page.body.data as Array<{ credentialId: string; renewedBy: string | null }>).map((r) => [
        r.credentialId,
        r.renewedBy,
      ]),
    );
  };
  const issue = async (n: number) => {
    const through = instances[n % 2]!;
    const res = await admin(through, '/admin/issue-vc', {
      userId: `renew.process.${n}@example.org`,
      schemaId: SCHEMA,
      vct: 'urn:vct:renewing',
      expiration: new Date(Date.now() + (5 + n) * 86_400_000).toISOString(),
      claimsUserId: `renew-${n}`,
    });
    expect(res.status).toBe(201);
    return res.body.credentialId as string;
  };

  it('renews each credential once, whichever process sweeps, with the claims looked up again', async () => {
    const [a, b] = instances as [InstanceProcess, InstanceProcess];
    const claims = await admin(a, '/admin/claims', {
      records: Array.from({ length: COUNT + 1 }, (_, n) => ({
        userId: `renew-${n}`,
        schemaId: SCHEMA,
        claims: { name: `Holder ${n}` },
      })),
    });
    expect(claims.status).toBe(200);
    const issued = await Promise.all(Array.from({ length: COUNT }, (_, n) => issue(n)));
    await expect
      .poll(async () => {
        const links = await renewedBy(b);
        return issued.filter((id) => links.get(id)).length;
      })
      .toBe(COUNT);
    // A later credential renewed too: sweeps kept running after the first ones were renewed.
    const marker = await issue(COUNT);
    await expect.poll(async () => (await renewedBy(a)).get(marker) ?? null).not.toBeNull();

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ renewed_from: string; n: string }>(
        'SELECT renewed_from, count(*) AS n FROM issuances WHERE renewed_from IS NOT NULL GROUP BY renewed_from',
      );
      expect(rows).toHaveLength(COUNT + 1);
      expect(rows.every((r) => Number(r.n) === 1)).toBe(true);
      // The outcome and its audit row are written last, after the renewing credential's upload:
      // history links a renewal as soon as its credential is recorded, so wait for the rows.
      await expect
        .poll(async () => {
          const audit = await client.query("SELECT target FROM audit_log WHERE action = 'renew'");
          return audit.rows.map((r) => r.target as string).sort();
        })
        .toEqual([...issued, marker].sort());
    } finally {
      await client.end();
    }

    // The renewed credential reached the holder the email resolves to, with the provider's claims.
    const links = await renewedBy(a);
    const renewing = links.get(issued[3]!)!;
    const holder = emulator.emulator.state.holderByEmail('renew.process.3@example.org')!;
    const stored = emulator.emulator.state.envelopes.get(renewing)!;
    const compact = openEnvelope(
      privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex),
      stored.envelope,
    ) as string;
    const payload = decodeJwt(compact.split('~')[0]!);
    expect(payload.id).toBe(`urn:uuid:${renewing}`);
    const disclosed = compact
      .split('~')
      .slice(1)
      .filter(Boolean)
      .map((d) => JSON.parse(Buffer.from(d, 'base64url').toString('utf8')) as unknown[]);
    expect(disclosed).toContainEqual([expect.any(String), 'name', 'Holder 3']);
  });
});
