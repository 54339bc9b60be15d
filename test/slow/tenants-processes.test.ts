import { createPublicKey, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { decodeJwt, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair, openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { ADA_CLAIMS, adaMembership } from '../helpers/direct-issue.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import {
  type InstanceProcess,
  isAlive,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { removeDir, tempDir } from '../helpers/issuer.js';
import { receiveWithOpenid4vci, sdJwtMembershipSchemas } from '../helpers/oid4vci-wallet.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { TEST_OPERATOR_KEY } from '../helpers/tenants.js';

const available = await postgresAvailable('tenants on two server processes');

interface Tenant {
  id: string;
  origin: string;
  host: string;
  apiKey: string;
  adminKey: string;
  emulator: EmulatorServer;
}

/** What one tenant issued: each credential by its channel, and the direct one's nonce. */
interface Issued {
  hosted: string;
  direct: string;
  directNonce: string;
  oid4vci: string;
}

// docs/several-issuers.md: two real server processes (src/main.ts, TENANCY=multi) on one
// PostgreSQL database; three tenants, added through one, issue hosted, direct and OpenID4VCI
// credentials through both at the same time; each credential verifies with its own tenant's
// published keys and status list, by the holder-side verifier, and with no other tenant's; a
// revocation shows in its own tenant's list only.
describe.skipIf(!available)('three tenants on two server processes', () => {
  let db: TempDatabase;
  const instances: InstanceProcess[] = [];
  const dirs = [tempDir(), tempDir()];
  const tenants: Tenant[] = [];
  const holder = generateHolderKeyPair('x25519');

  /** fetch on instance `i` as if for `t`'s host (TRUST_PROXY=loopback). */
  const at =
    (i: InstanceProcess, t: Tenant): typeof fetch =>
    (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const headers = new Headers(init?.headers);
      headers.set('x-forwarded-host', t.host);
      return fetch(`${i.url}${url.pathname}${url.search}`, { ...init, headers });
    };
  const send = (i: InstanceProcess, t: Tenant, path: string, body: unknown, key: Record<string, string>) =>
    at(i, t)(`${t.origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...key },
      body: JSON.stringify(body),
    });
  const admin = (i: InstanceProcess, t: Tenant, path: string, body: unknown) =>
    send(i, t, path, body, { 'x-admin-api-key': t.adminKey });

  beforeAll(async () => {
    db = await createTempDatabase();
    const env = {
      TENANCY: 'multi',
      TRUST_PROXY: 'loopback',
      OPERATOR_API_KEY: TEST_OPERATOR_KEY,
      OID4VCI: 'on',
      SCHEMAS_DIR: sdJwtMembershipSchemas(dirs[0]!),
    };
    for (const dir of dirs)
      instances.push(
        await startInstanceProcess({ databaseUrl: db.url, serviceUrl: 'http://127.0.0.1:9', dir, env }),
      );
    const [one, two] = instances as [InstanceProcess, InstanceProcess];
    for (const id of ['red', 'green', 'blue']) {
      const partnerId = randomUUID();
      const t: Tenant = {
        id,
        origin: `https://${id}.issuers.test`,
        host: `${id}.issuers.test`,
        apiKey: `api-${id}-${randomBytes(16).toString('hex')}`,
        adminKey: `admin-${id}-${randomBytes(16).toString('hex')}`,
        emulator: await startEmulatorServer({
          partnerId,
          // The tenant's partner keys as its origin publishes them.
          jwks: async () =>
            (await (await at(one, t)(`${t.origin}/.well-known/jwks.json`)).json()) as { keys: JWK[] },
        }),
      };
      const added = await fetch(`${one.url}/operator/tenants`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-operator-api-key': TEST_OPERATOR_KEY },
        body: JSON.stringify({
          id,
          origin: t.origin,
          settings: { partnerId, serviceBaseUrl: t.emulator.url },
          apiKey: t.apiKey,
          adminApiKeys: { admin: t.adminKey },
        }),
      });
      expect(added.status, await added.clone().text()).toBe(201);
      tenants.push(t);
    }
    // The second process follows the registry: it serves the three without a restart.
    await vi.waitFor(
      async () => {
        const listed = (await (
          await fetch(`${two.url}/operator/tenants`, { headers: { 'x-operator-api-key': TEST_OPERATOR_KEY } })
        ).json()) as { tenants: Array<{ serving: boolean }> };
        expect(listed.tenants.filter((t) => t.serving)).toHaveLength(3);
      },
      { timeout: 30_000, interval: 100 },
    );
    for (const t of tenants) {
      const seeded = await admin(two, t, '/admin/claims', {
        records: [
          { userId: `user-${t.id}`, schemaId: 'membership-v1', claims: { ...ADA_CLAIMS, givenName: t.id } },
        ],
      });
      expect(seeded.status, await seeded.clone().text()).toBe(200);
    }
  }, 180_000);

  afterAll(async () => {
    await stopInstanceProcesses(instances);
    await Promise.all(tenants.map((t) => t.emulator.close()));
    await db?.drop();
    for (const dir of dirs) removeDir(dir);
  });

  /** The three channels of `t`, hosted and OpenID4VCI through `i`, direct through the other. */
  async function issueAll(t: Tenant, i: InstanceProcess, other: InstanceProcess): Promise<Issued> {
    const holderDid = `did:example:holder-of-${t.id}`;
    const email = `ada.${t.id}@example.org`;
    const [hostedRes, directRes, offerRes] = await Promise.all([
      send(
        i,
        t,
        '/issue-vc',
        {
          holderDID: holderDid,
          pubKey: holder.publicKeyHex,
          userId: `user-${t.id}`,
          schemaId: 'membership-v1',
        },
        { 'x-api-key': t.apiKey },
      ),
      admin(other, t, '/admin/issue-vc', { userId: email, schemaId: 'membership-v1', ...adaMembership() }),
      admin(i, t, '/admin/credential-offers', { schemaId: 'membership-v1', userId: `user-${t.id}` }),
    ]);
    expect(hostedRes.status, await hostedRes.clone().text()).toBe(201);
    expect(directRes.status, await directRes.clone().text()).toBe(201);
    expect(offerRes.status, await offerRes.clone().text()).toBe(201);
    const { offerUri } = (await offerRes.json()) as { offerUri: string };
    const { credential: oid4vci } = await receiveWithOpenid4vci(offerUri, { fetch: at(i, t) });
    const { credentialId, revocationNonce } = (await directRes.json()) as {
      credentialId: string;
      revocationNonce: string;
    };
    const state = t.emulator.emulator.state;
    const hostedEnvelope = [...state.envelopes.values()].find((e) => e.envelope.holderDid === holderDid)!;
    const who = state.holderByEmail(email)!;
    return {
      hosted: openEnvelope(holder.privateKey, hostedEnvelope.envelope) as string,
      direct: openEnvelope(
        privateKeyFromPkcs8Hex(who.privateKeyPkcs8Hex),
        state.envelopes.get(credentialId)!.envelope,
      ) as string,
      directNonce: revocationNonce,
      oid4vci,
    };
  }

  it('each tenant issues on both processes at once; each credential verifies with its own keys only, and a revocation shows in its own list only', async () => {
    const [one, two] = instances as [InstanceProcess, InstanceProcess];
    const issued = await Promise.all(
      tenants.map((t, n) => (n % 2 === 0 ? issueAll(t, one, two) : issueAll(t, two, one))),
    );
    const verify = (t: Tenant, compact: string, i: InstanceProcess) =>
      verifySdJwtVc(t.origin, compact, { fetch: at(i, t) });
    const all = (n: number) => [issued[n]!.hosted, issued[n]!.direct, issued[n]!.oid4vci];

    for (const [n, t] of tenants.entries())
      for (const compact of all(n)) {
        const verified = await verify(t, compact, two);
        expect((verified.payload as { iss: string; givenName?: string }).iss).toBe(t.origin);
        for (const other of tenants.filter((o) => o !== t))
          await expect(verify(other, compact, one)).rejects.toThrow();
      }

    // The first tenant revokes its direct credential through the second process.
    const revoked = await admin(two, tenants[0]!, '/admin/revoke', {
      revocationNonce: issued[0]!.directNonce,
    });
    expect(revoked.status, await revoked.clone().text()).toBe(200);
    for (const i of [one, two]) {
      await expect(verify(tenants[0]!, issued[0]!.direct, i)).rejects.toThrow(/[Ss]tatus/);
      await verify(tenants[0]!, issued[0]!.hosted, i);
      await verify(tenants[0]!, issued[0]!.oid4vci, i);
      for (const [n, t] of tenants.entries())
        if (n > 0) for (const compact of all(n)) await verify(t, compact, i);
    }
    // Read as a verifier reads the lists: the revoked bit is set in the first tenant's list only,
    // at its index; the same index of the others' lists, and every other credential's, is 0.
    const statusOf = (compact: string) =>
      (decodeJwt(compact.split('~')[0]!) as { status: { status_list: { idx: number; uri: string } } }).status
        .status_list;
    const revokedAt = statusOf(issued[0]!.direct);
    for (const i of [one, two])
      for (const [n, t] of tenants.entries()) {
        const { uri } = statusOf(issued[n]!.hosted);
        expect(uri.startsWith(`${t.origin}/statuslist/`)).toBe(true);
        const res = await at(i, t)(uri, { headers: { accept: 'application/statuslist+jwt' } });
        const list = getListFromStatusListJWT(await res.text());
        expect(list.getStatus(revokedAt.idx)).toBe(n === 0 && uri === revokedAt.uri ? 1 : 0);
        for (const compact of all(n))
          if (compact !== issued[0]!.direct) expect(list.getStatus(statusOf(compact).idx)).toBe(0);
      }
    expect(instances.every(isAlive)).toBe(true);
  });

  // docs/several-issuers.md "Changing a tenant": a change through one process reaches the other.
  it('a tenant changed through one process is served changed by the other: its new x-api-key and request encryption key', async () => {
    const [one, two] = instances as [InstanceProcess, InstanceProcess];
    const t = tenants[1]!;
    const apiKey = `api-rotated-${randomBytes(16).toString('hex')}`;
    const pem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string;
    const changed = await fetch(`${one.url}/operator/tenants/${t.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'x-operator-api-key': TEST_OPERATOR_KEY },
      body: JSON.stringify({ apiKey, secrets: { oid4vciRequestEncryptionKey: pem } }),
    });
    expect(changed.status, await changed.clone().text()).toBe(200);
    const hosted = (i: InstanceProcess, key: string) => send(i, t, '/issue-vc', {}, { 'x-api-key': key });
    await vi.waitFor(async () => expect((await hosted(two, t.apiKey)).status).toBe(403), {
      timeout: 30_000,
      interval: 100,
    });
    const { x } = createPublicKey(pem).export({ format: 'jwk' });
    for (const i of [one, two]) {
      expect((await hosted(i, apiKey)).status).toBe(400);
      const meta = (await (await at(i, t)(`${t.origin}/.well-known/openid-credential-issuer`)).json()) as {
        credential_request_encryption: { jwks: { keys: Array<{ x: string }> } };
      };
      expect(meta.credential_request_encryption.jwks.keys[0]!.x).toBe(x);
    }
    // The next issuance on the other process works with the changed tenant.
    const offer = await admin(two, t, '/admin/credential-offers', {
      schemaId: 'membership-v1',
      userId: `user-${t.id}`,
    });
    expect(offer.status, await offer.clone().text()).toBe(201);
    const { offerUri } = (await offer.json()) as { offerUri: string };
    const { credential } = await receiveWithOpenid4vci(offerUri, { fetch: at(two, t) });
    expect((await verifySdJwtVc(t.origin, credential, { fetch: at(one, t) })).payload).toMatchObject({
      iss: t.origin,
    });
    expect(instances.every(isAlive)).toBe(true);
  });
});
