import { cpSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_STORE } from '../helpers/issuer.js';
import { startTenants, type TestTenant, type TestTenants } from '../helpers/tenants.js';
import { tempDir } from '../helpers/tmp.js';

const DAY = 86_400_000;

/** The kit's schemas plus one whose direct credentials are renewed within 30 days of expiry. */
function renewingSchemas(): string {
  const schemas = join(tempDir(), 'schemas');
  cpSync(resolve('schemas'), schemas, { recursive: true });
  writeFileSync(
    join(schemas, 'renewing.json'),
    JSON.stringify({
      schemaId: 'renewing-v1',
      proofTypes: ['SD_JWT_VC'],
      credentialSubject: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      claims: { provider: 'sqlite' },
      sdJwt: { vct: 'urn:vct:renewing-v1' },
      renewal: { beforeExpirySeconds: 30 * 86_400, revokePrevious: false },
    }),
  );
  return schemas;
}

// docs/several-issuers.md "Routing": a disabled tenant issues nothing, and that includes the
// renewal sweep's re-issues of its direct credentials (docs/operations.md "Renewal"); enabled
// again, the sweep renews what came due meanwhile.
describe(`a disabled tenant's renewal sweep (${TEST_STORE})`, () => {
  let d: TestTenants;
  let t: TestTenant;

  beforeAll(async () => {
    d = await startTenants(0);
    t = await d.add('renewer', { schemasDir: renewingSchemas() });
  });
  afterAll(async () => {
    await d?.close();
  });

  it('renews nothing while disabled and renews the due credential once enabled', async () => {
    // Renewal issues the claims source's claims of the credential's claims user.
    const ctx = d.running.deployment.byId(t.id)!.ctx!;
    await ctx.store.claims.upsertClaims([
      { userId: 'renewer-u1', schemaId: 'renewing-v1', claims: { name: 'Ada' }, expiresAt: null },
    ]);
    const issued = await d.admin(t, '/admin/issue-vc', {
      userId: 'ada.renewer@example.org',
      schemaId: 'renewing-v1',
      vct: 'urn:vct:renewing-v1',
      claimsUserId: 'renewer-u1',
      expiration: new Date(Date.now() + 10 * DAY).toISOString(),
    });
    expect(issued.status).toBe(201);
    const { credentialId } = (await issued.json()) as { credentialId: string };
    const renewal = () => ctx.renewal;

    expect((await d.operator('POST', `/operator/tenants/${t.id}/disable`)).status).toBe(200);
    const whileDisabled = await renewal().sweep();
    expect(whileDisabled).toMatchObject({ renewed: 0, failed: 0 });
    const history = async () =>
      (
        (await (await d.admin(t, '/admin/issuance-history')).json()) as {
          data: Array<{ credentialId: string; renewedFrom: string | null }>;
        }
      ).data;
    expect((await history()).map((r) => r.credentialId)).toEqual([credentialId]);

    expect((await d.operator('POST', `/operator/tenants/${t.id}/enable`)).status).toBe(200);
    const enabled = await renewal().sweep();
    expect(enabled).toMatchObject({ ran: true, renewed: 1, failed: 0 });
    const rows = await history();
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.credentialId !== credentialId)?.renewedFrom).toBe(credentialId);
  });
});
