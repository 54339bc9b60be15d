import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { runCli } from '../helpers/cli.js';
import { adaMembership } from '../helpers/direct-issue.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import {
  startIssuer,
  TEST_ADMIN_API_KEY,
  TEST_API_KEY,
  TEST_PARTNER_ID,
  TEST_STORE,
  type TestIssuer,
} from '../helpers/issuer.js';
import { startTenants, TEST_OPERATOR_KEY, type TestTenants } from '../helpers/tenants.js';

const ORIGIN = 'https://first.issuers.test';
const HOST = 'first.issuers.test';

// docs/several-issuers.md "Adopting a single deployment": its data, keys and origin become tenant
// one's, and what it issued before still verifies.
describe(`adopting a single deployment as a tenant (${TEST_STORE})`, () => {
  let single: TestIssuer;
  let d: TestTenants;
  let emulator: EmulatorServer;
  const issued: { compact: string; revocationNonce: string }[] = [];
  let kid: string;
  let partitions: number[];

  async function issueDirect(
    issue: (body: unknown) => Promise<Response>,
    state: EmulatorServer['emulator']['state'],
    email: string,
  ) {
    const res = await issue({ userId: email, schemaId: 'membership-v1', ...adaMembership() });
    expect(res.status).toBe(201);
    const { credentialId, revocationNonce } = (await res.json()) as {
      credentialId: string;
      revocationNonce: string;
    };
    const who = state.holderByEmail(email)!;
    const envelope = state.envelopes.get(credentialId)!.envelope;
    return {
      compact: openEnvelope(privateKeyFromPkcs8Hex(who.privateKeyPkcs8Hex), envelope) as string,
      revocationNonce,
    };
  }

  beforeAll(async () => {
    single = await startIssuer({ env: { ISSUER_ORIGIN: ORIGIN } });
    for (const email of ['kept@example.org', 'revoked@example.org'])
      issued.push(
        await issueDirect((body) => single.admin('/admin/issue-vc', body), single.emulator!.state, email),
      );
    expect(
      (await single.admin('/admin/revoke', { revocationNonce: issued[1]!.revocationNonce })).status,
    ).toBe(200);
    kid = single.ctx.keys.current().signing.kid;
    partitions = (await single.ctx.store.status.listPartitions()).map((p) => p.partition);
    await single.close();
    // The same database and KEYS_DIR, now a multi deployment.
    d = await startTenants(0, { dir: single.dir });
    emulator = await startEmulatorServer({
      partnerId: TEST_PARTNER_ID,
      jwks: async () => ({
        keys:
          d.running.deployment
            .byId('first')
            ?.ctx?.keys.current()
            .partnerKeys.map((k) => k.publicJwk) ?? [],
      }),
    });
  });
  afterAll(async () => {
    await d?.close();
    await emulator?.close();
  });

  const env = () => ({
    OPERATOR_API_KEY: TEST_OPERATOR_KEY,
    ISSUER_ORIGIN: ORIGIN,
    PARTNER_ID: TEST_PARTNER_ID,
    API_KEY: TEST_API_KEY,
    ADMIN_API_KEY: TEST_ADMIN_API_KEY,
    SERVICE_V1_BASE_URL: emulator.url,
  });

  it('npm run admin -- tenants adopt keeps the origin, keys, status lists and history', async () => {
    const adopted = await runCli(['--url', d.url, 'tenants', 'adopt', 'first'], env(), process.cwd());
    expect(adopted.stderr).toBe('');
    expect(adopted.code).toBe(0);
    expect(adopted.stdout).toMatch(/first: adopted/);
    const ctx = d.running.deployment.byId('first')!.ctx!;
    expect(ctx.keys.current().signing.kid).toBe(kid);

    const fetchFirst = (url: string | URL) => {
      const at = new URL(url);
      return d.fetch(HOST, `${at.pathname}${at.search}`);
    };
    // Issued before: the kept one verifies with the published keys and lists; the revoked one fails.
    const kept = await verifySdJwtVc(ORIGIN, issued[0]!.compact, { fetch: fetchFirst });
    expect(kept.header.kid).toBe(kid);
    await expect(verifySdJwtVc(ORIGIN, issued[1]!.compact, { fetch: fetchFirst })).rejects.toThrow(
      /[Ss]tatus/,
    );
    for (const partition of partitions)
      expect((await d.fetch(HOST, `/statuslist/${partition}`)).status).toBe(200);

    // The old keys to the routes still open them, and issuance goes on in the same history.
    const admin = (body?: unknown) =>
      d.fetch(HOST, body === undefined ? '/admin/issuance-history' : '/admin/issue-vc', {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'x-admin-api-key': TEST_ADMIN_API_KEY, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const after = await issueDirect(admin, emulator.emulator.state, 'after@example.org');
    await verifySdJwtVc(ORIGIN, after.compact, { fetch: fetchFirst });
    const history = (await (await admin()).json()) as { data: unknown[] };
    expect(history.data).toHaveLength(3);
    const holder = await d.fetch(HOST, '/available-vc', {
      method: 'POST',
      headers: { 'x-api-key': TEST_API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: 'nobody' }),
    });
    expect(holder.status).not.toBe(403);
  });

  it('the deployment is adopted once: a second adoption is refused naming the namespace', async () => {
    const again = await d.operator('POST', '/operator/tenants/adopt', {
      id: 'second',
      origin: 'https://second.issuers.test',
      settings: { partnerId: TEST_PARTNER_ID },
      apiKey: 'k1',
      adminApiKeys: { admin: 'k2' },
    });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { details: { field: string } }).details.field).toBe('namespace');
    const audit = (await (await d.operator('GET', '/operator/audit')).json()) as {
      audit: Array<{ action: string; tenantId: string }>;
    };
    expect(audit.audit.map((r) => [r.action, r.tenantId])).toEqual([['tenant.adopted', 'first']]);
  });
});
