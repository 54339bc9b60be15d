import { createPublicKey, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { decodeJwt, exportJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import { runCli } from '../helpers/cli.js';
import { TEST_STORE } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { startTenants, TEST_OPERATOR_KEY, type TestTenant, type TestTenants } from '../helpers/tenants.js';

const holder = generateHolderKeyPair('x25519');
const holderJwk = {
  kty: 'EC',
  crv: 'P-256',
  x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
  y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
};

const p256Pem = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  }) as string;

/** The public JWK coordinates of a PEM private key, as metadata publishes them. */
async function publicOf(pem: string) {
  const { x, y } = await exportJWK(createPublicKey(pem));
  return { x, y };
}

/** Hosted issuance on `t`, the envelope found on `service` (the hosting service it uploads to). */
async function issueHosted(d: TestTenants, t: TestTenant, service: EmulatorServer): Promise<string> {
  const holderDid = `did:example:${randomUUID()}`;
  const res = await d.holder(t, '/issue-vc', {
    holderDID: holderDid,
    pubKey: holder.publicKeyHex,
    userId: 'demo-user-1',
    schemaId: 'membership-v1',
    signingKey: { jwk: holderJwk },
  });
  expect(res.status, await res.clone().text()).toBe(201);
  const stored = [...service.emulator.state.envelopes.values()].find(
    (e) => e.envelope.holderDid === holderDid,
  );
  expect(stored, 'uploaded to this hosting service').toBeDefined();
  return openEnvelope(holder.privateKey, stored!.envelope) as string;
}

const issOf = (compact: string) => decodeJwt(compact.split('~')[0]!).iss;

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;

// docs/several-issuers.md "Changing a tenant": PATCH /operator/tenants/:id and `tenants set`.
describe(`changing a tenant (${TEST_STORE})`, () => {
  let d: TestTenants;
  let a: TestTenant;
  let b: TestTenant;

  beforeAll(async () => {
    d = await startTenants(2);
    [a, b] = d.tenants as [TestTenant, TestTenant];
  });
  afterAll(async () => {
    await d?.close();
  });

  const patch = (t: TestTenant, body: unknown) => d.operator('PATCH', `/operator/tenants/${t.id}`, body);
  const audit = () =>
    json<{ audit: Array<{ action: string; tenantId: string; detail: unknown }> }>(
      d.operator('GET', '/operator/audit'),
    );

  it('changes its hosting service, partner id and SD_JWT_ISSUER without a restart: the next issuance uses them', async () => {
    expect(issOf(await issueHosted(d, a, a.emulator))).toBe(a.origin);
    const partnerId = randomUUID();
    const service = await startEmulatorServer({
      partnerId,
      jwks: async () => ({
        keys:
          d.running.deployment
            .byId(a.id)
            ?.ctx?.keys.current()
            .partnerKeys.map((k) => k.publicJwk) ?? [],
      }),
    });
    try {
      const res = await patch(a, {
        settings: { partnerId, serviceBaseUrl: service.url, sdJwtIssuer: 'did:web' },
      });
      expect(res.status).toBe(200);
      const { tenant } = await json<{ tenant: { settings: unknown; serving: boolean } }>(res);
      expect(tenant).toMatchObject({
        serving: true,
        settings: { partnerId, serviceBaseUrl: service.url, sdJwtIssuer: 'did:web' },
      });
      expect(issOf(await issueHosted(d, a, service))).toBe(`did:web:${a.host}`);
      const [row] = (await audit()).audit;
      expect(row).toMatchObject({
        action: 'tenant.changed',
        tenantId: a.id,
        detail: {
          origin: a.origin,
          changed: ['settings.partnerId', 'settings.sdJwtIssuer', 'settings.serviceBaseUrl'],
        },
      });
      // null gives a setting back to the deployment's default.
      expect((await patch(a, { settings: { sdJwtIssuer: null } })).status).toBe(200);
      expect(issOf(await issueHosted(d, a, service))).toBe(a.origin);
      expect(
        (await patch(a, { settings: { partnerId: a.partnerId, serviceBaseUrl: a.emulator.url } })).status,
      ).toBe(200);
      await issueHosted(d, a, a.emulator);
    } finally {
      await service.close();
    }
  });

  it("rotates the hosting service's x-api-key (the old one refused at once, 403 as any wrong key) and adds and removes admin keys; the audit holds no key", async () => {
    const apiKey = `api-rotated-${randomBytes(16).toString('hex')}`;
    const opsKey = `ops-${randomBytes(16).toString('hex')}`;
    const res = await patch(b, { apiKey, adminApiKeys: { ops: opsKey, admin: null } });
    expect(res.status).toBe(200);
    expect((await json<{ tenant: { adminActors: string[] } }>(res)).tenant.adminActors).toEqual(['ops']);
    expect((await d.holder(b, '/issue-vc', {})).status).toBe(403);
    expect((await d.holder(b, '/issue-vc', {}, apiKey)).status).toBe(400);
    expect((await d.admin(b, '/admin/issuance-history')).status).toBe(403);
    expect((await d.admin(b, '/admin/issuance-history', undefined, opsKey)).status).toBe(200);
    // The other tenant is untouched.
    expect((await d.holder(a, '/issue-vc', {})).status).toBe(400);
    const rows = await audit();
    expect(rows.audit[0]).toMatchObject({
      action: 'tenant.changed',
      detail: { changed: ['apiKey', 'adminApiKeys.ops', 'adminApiKeys.admin'] },
    });
    const everything =
      JSON.stringify(rows) + JSON.stringify(await json(d.operator('GET', `/operator/tenants/${b.id}`)));
    expect(everything).not.toContain(apiKey);
    expect(everything).not.toContain(opsKey);
    // The last admin key stays.
    const last = await patch(b, { adminApiKeys: { ops: null } });
    expect(last.status).toBe(400);
    expect((await json<{ details: { field: string } }>(last)).details.field).toBe('adminApiKeys.ops');
    b.apiKey = apiKey;
    b.adminKey = opsKey;
  });

  it('refuses a change of origin, and bad input, naming the field, with nothing changed', async () => {
    const before = await json(d.operator('GET', '/operator/tenants'));
    const auditBefore = await audit();
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ origin: 'https://elsewhere.issuers.test' }, 'origin'],
      [{ id: 'other' }, 'id'],
      [{ settings: { partnerId: 'nope' } }, 'settings.partnerId'],
      [{ settings: { serviceBaseUrl: 'ftp://service.example' } }, 'settings.serviceBaseUrl'],
      [{ settings: { sdJwtIssuer: 'jwk' } }, 'settings.sdJwtIssuer'],
      [{ settings: { region: 'eu' } }, 'settings.region'],
      [{ apiKey: '' }, 'apiKey'],
      [{ adminApiKeys: { 'no spaces': 'k' } }, 'adminApiKeys.no spaces'],
      [{ secrets: { oid4vciRequestEncryptionKey: 'not a key' } }, 'secrets.oid4vciRequestEncryptionKey'],
      [{ secrets: { oid4vciRequestEncryptionKey: rsa } }, 'secrets.oid4vciRequestEncryptionKey'],
      [
        { settings: { oid4vciLogin: { issuer: 'https://login.example', clientId: 'issuer' } } },
        'secrets.oid4vciLoginClientSecret',
      ],
      [{ secrets: { oid4vciLoginClientSecret: 's3cret' } }, 'secrets.oid4vciLoginClientSecret'],
      // A valid part with a refused one: neither is written.
      [{ apiKey: 'would-be-new', settings: { partnerId: 'nope' } }, 'settings.partnerId'],
    ];
    for (const [body, field] of cases) {
      const res = await patch(a, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const answer = await json<{ message: string; details: { field: string } }>(res);
      expect(answer.details.field, JSON.stringify(body)).toBe(field);
      expect(answer.message).toContain(field);
    }
    expect((await d.operator('PATCH', '/operator/tenants/nobody', { apiKey: 'k' })).status).toBe(404);
    expect(await json(d.operator('GET', '/operator/tenants'))).toEqual(before);
    expect(await audit()).toEqual(auditBefore);
    expect((await d.holder(a, '/issue-vc', {})).status).toBe(400);
  });

  it('gives each tenant its own request encryption key: generated in its keys folder in development, or its own sealed in the registry, never shown', async () => {
    const published = async (t: TestTenant) => {
      const meta = await json<{
        credential_request_encryption?: { jwks: { keys: Array<{ x: string; y: string }> } };
      }>(d.fetch(t.host, '/.well-known/openid-credential-issuer'));
      const key = meta.credential_request_encryption?.jwks.keys[0];
      return key && { x: key.x, y: key.y };
    };
    // Development: a key of its own in KEYS_DIR/tenants/<id>/, as a single development start's.
    for (const t of [a, b])
      expect(existsSync(join(d.dir, 'keys', 'tenants', t.id, 'dev-request-encryption.pem'))).toBe(true);
    expect(await published(a)).toBeDefined();
    expect(await published(a)).not.toEqual(await published(b));

    const [pemA, pemB] = [p256Pem(), p256Pem()];
    expect((await patch(a, { secrets: { oid4vciRequestEncryptionKey: pemA } })).status).toBe(200);
    expect((await patch(b, { secrets: { oid4vciRequestEncryptionKey: pemB } })).status).toBe(200);
    expect(await published(a)).toEqual(await publicOf(pemA));
    expect(await published(b)).toEqual(await publicOf(pemB));

    const shown = await json<{ tenant: { secrets?: string[] } }>(
      d.operator('GET', `/operator/tenants/${a.id}`),
    );
    expect(shown.tenant.secrets).toEqual(['oid4vciRequestEncryptionKey']);
    const everything =
      JSON.stringify(shown) +
      JSON.stringify(await json(d.operator('GET', '/operator/tenants'))) +
      JSON.stringify(await audit());
    expect(everything).not.toMatch(/PRIVATE KEY|v1\./);
    // Sealed in the registry, bound to its tenant.
    const stored = await d.running.deployment.namespaces.registry.get(a.id);
    expect(stored?.sealedSecrets?.oid4vciRequestEncryptionKey).toMatch(/^v1\./);
    expect(JSON.stringify(stored)).not.toContain('PRIVATE KEY');

    // Removed: back to the one of its keys folder.
    const dev = await publicOf(
      readFileSync(join(d.dir, 'keys', 'tenants', a.id, 'dev-request-encryption.pem'), 'utf8'),
    );
    expect((await patch(a, { secrets: { oid4vciRequestEncryptionKey: null } })).status).toBe(200);
    expect(await published(a)).toEqual(dev);
  });

  it('gives a tenant a login provider of its own: it alone offers the authorization code flow', async () => {
    const grants = async (t: TestTenant) =>
      (
        await json<{ grant_types_supported: string[] }>(
          d.fetch(t.host, '/.well-known/oauth-authorization-server'),
        )
      ).grant_types_supported;
    expect(await grants(a)).not.toContain('authorization_code');
    const res = await patch(a, {
      settings: { oid4vciLogin: { issuer: 'https://login.acme.example', clientId: 'acme-issuer' } },
      secrets: { oid4vciLoginClientSecret: 'acme-client-secret' },
    });
    expect(res.status).toBe(200);
    expect(await grants(a)).toContain('authorization_code');
    expect(await grants(b)).not.toContain('authorization_code');
    // Another provider never gets this one's secret: a new issuer or client needs its own.
    const moved = await patch(a, {
      settings: { oid4vciLogin: { issuer: 'https://login.other.example', clientId: 'acme-issuer' } },
    });
    expect(moved.status).toBe(400);
    expect(JSON.stringify(await moved.json())).toContain('secrets.oid4vciLoginClientSecret');
    // Switching to private_key_jwt replaces the client secret; removing the provider removes its key.
    expect((await patch(a, { secrets: { oid4vciLoginClientKey: p256Pem() } })).status).toBe(200);
    expect(
      (await json<{ tenant: { secrets: string[] } }>(d.operator('GET', `/operator/tenants/${a.id}`))).tenant
        .secrets,
    ).toEqual(['oid4vciLoginClientKey']);
    expect((await patch(a, { settings: { oid4vciLogin: null } })).status).toBe(200);
    expect(await grants(a)).not.toContain('authorization_code');
    expect(
      (await json<{ tenant: { secrets?: string[] } }>(d.operator('GET', `/operator/tenants/${a.id}`))).tenant
        .secrets,
    ).toBeUndefined();
  });

  it('npm run admin -- tenants set: rotates the x-api-key (shown once), changes settings, refuses the origin', async () => {
    const env = { OPERATOR_API_KEY: TEST_OPERATOR_KEY };
    const cli = (...args: string[]) =>
      runCli(['--url', d.url, 'tenants', 'set', ...args], env, process.cwd());
    const rotated = await cli(a.id, '--rotate-api-key', '--sd-jwt-issuer', 'did:web');
    expect(rotated.code, rotated.stderr).toBe(0);
    const key = /x-api-key \(for the hosting service; shown once\): (\S+)/.exec(rotated.stdout)?.[1];
    expect(key).toBeDefined();
    expect((await d.holder(a, '/issue-vc', {})).status).toBe(403);
    expect((await d.holder(a, '/issue-vc', {}, key)).status).toBe(400);
    a.apiKey = key!;
    expect(issOf(await issueHosted(d, a, a.emulator))).toBe(`did:web:${a.host}`);
    const unset = await cli(a.id, '--unset', 'sdJwtIssuer');
    expect(unset.code, unset.stderr).toBe(0);
    expect(issOf(await issueHosted(d, a, a.emulator))).toBe(a.origin);
    // Its own login provider, the client secret read from the environment.
    const login = await runCli(
      [
        '--url',
        d.url,
        'tenants',
        'set',
        a.id,
        '--login-issuer',
        'https://login.acme.example',
        '--login-client-id',
        'acme-issuer',
        '--login-client-secret-env',
        'ACME_LOGIN_SECRET',
      ],
      { ...env, ACME_LOGIN_SECRET: 'acme-login-secret-0123456789' },
      process.cwd(),
    );
    expect(login.code, login.stderr).toBe(0);
    const shown = await cli(a.id, '--unset', 'oid4vciLogin');
    expect(shown.code, shown.stderr).toBe(0);
    const listed = await runCli(['--url', d.url, '--json', 'tenants', 'show', a.id], env, process.cwd());
    expect(listed.stdout).not.toContain('acme-login-secret');
    const origin = await cli(a.id, '--origin', 'https://moved.issuers.test');
    expect(origin.code).toBe(1);
    expect(origin.stderr).toMatch(/400 INVALID_PARAMETER: origin: cannot be changed/);
  });
});

// docs/several-issuers.md "Changing a tenant": the requests in flight on the old context finish on it.
describe(`a change while a request is in flight (${TEST_STORE})`, () => {
  let d: TestTenants;
  let t: TestTenant;
  const held: ServerResponse[] = [];
  let holding: () => void = () => {};
  const source = createServer((req, res) => {
    req.resume();
    held.push(res);
    holding();
  });

  beforeAll(async () => {
    source.listen(0, '127.0.0.1');
    await once(source, 'listening');
    d = await startTenants(0);
    // membership-v1 whose claims come from `source`, which answers when the test says.
    const schemas = join(d.dir, 'held-schemas');
    const schema = JSON.parse(readFileSync('schemas/membership-v1.json', 'utf8'));
    schema.proofTypes = ['SD_JWT_VC'];
    delete schema.iden3;
    schema.claims = {
      provider: 'http',
      url: `http://127.0.0.1:${(source.address() as AddressInfo).port}/claims`,
      timeoutMs: 60_000,
    };
    mkdirSync(schemas, { recursive: true });
    writeFileSync(join(schemas, 'membership-v1.json'), JSON.stringify(schema));
    t = await d.add('held', { schemasDir: schemas });
  });
  afterAll(async () => {
    await d?.close();
    source.closeAllConnections();
    source.close();
  });

  it('an issuance begun before an x-api-key rotation completes (201) on the old context; the next with the old key is refused', async () => {
    const arrived = new Promise<void>((ok) => {
      holding = ok;
    });
    const inFlight = d.holder(t, '/issue-vc', {
      holderDID: 'did:example:in-flight',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    });
    await arrived;
    const before = d.running.deployment.byId(t.id)!;
    const apiKey = `api-rotated-${randomBytes(16).toString('hex')}`;
    expect((await d.operator('PATCH', `/operator/tenants/${t.id}`, { apiKey })).status).toBe(200);
    expect(d.running.deployment.byId(t.id)).not.toBe(before);
    expect((await d.holder(t, '/issue-vc', {})).status).toBe(403);
    held.splice(0).forEach((res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          eligible: true,
          credentialSubject: {
            givenName: 'Ada',
            familyName: 'Lovelace',
            memberSince: '2020-01-01',
            tier: 'gold',
            memberNumber: 7,
          },
        }),
      );
    });
    expect((await inFlight).status).toBe(201);
    const issued = await json<{ pagination: { total: number } }>(d.admin(t, '/admin/issuance-history'));
    expect(issued.pagination.total).toBe(1);
  });
});

// docs/several-issuers.md "Changing a tenant": a change through one instance reaches the others.
describe.runIf(await postgresAvailable('a tenant changed on two PostgreSQL instances'))(
  'a tenant changed through one PostgreSQL instance',
  () => {
    let db: TempDatabase;
    let one: TestTenants;
    let two: TestTenants;

    beforeAll(async () => {
      db = await createTempDatabase();
      one = await startTenants(1, { env: { DATABASE_URL: db.url } });
      two = await startTenants(0, { env: { DATABASE_URL: db.url }, dir: one.dir });
      await vi.waitFor(() => expect(two.running.deployment.byId('t1')?.ctx).toBeDefined(), {
        timeout: 10_000,
      });
    });
    afterAll(async () => {
      await two?.close();
      await one?.close();
      await db?.drop();
    });

    it('is served changed by the other: its new x-api-key and its own request encryption key', async () => {
      const t = one.tenants[0]!;
      const apiKey = `api-rotated-${randomBytes(16).toString('hex')}`;
      const pem = p256Pem();
      const res = await one.operator('PATCH', `/operator/tenants/${t.id}`, {
        apiKey,
        secrets: { oid4vciRequestEncryptionKey: pem },
      });
      expect(res.status).toBe(200);
      await vi.waitFor(async () => expect((await two.holder(t, '/issue-vc', {})).status).toBe(403), {
        timeout: 10_000,
      });
      expect((await two.holder(t, '/issue-vc', {}, apiKey)).status).toBe(400);
      const meta = await json<{
        credential_request_encryption: { jwks: { keys: Array<{ x: string; y: string }> } };
      }>(two.fetch(t.host, '/.well-known/openid-credential-issuer'));
      const { x, y } = meta.credential_request_encryption.jwks.keys[0]!;
      expect({ x, y }).toEqual(await publicOf(pem));
    });
  },
);
