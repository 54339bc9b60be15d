import { hkdfSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVELOPMENT_KEY_ENCRYPTION_KEY } from '../../src/config/key-encryption-key.js';
import { openSealedKey } from '../../src/keys/sealed-key.js';
import { adaMembership } from '../helpers/direct-issue.js';
import { TEST_STORE } from '../helpers/issuer.js';
import { processToken, softHsmAvailable } from '../helpers/softhsm.js';
import { startTenants, type TestTenant, type TestTenants } from '../helpers/tenants.js';

const available = softHsmAvailable('the tenants on KEY_BACKEND=pkcs11 tests');

// docs/several-issuers.md "Where the data lives": tenants of one deployment keep their keys in one
// token, each key labelled with its tenant and found by its own CKA_ID from its tenant's namespace.
describe.skipIf(!available)(`tenants on KEY_BACKEND=pkcs11 (SoftHSM2, ${TEST_STORE})`, () => {
  let d: TestTenants;

  beforeAll(async () => {
    d = await startTenants(2, { env: processToken().env });
  });
  afterAll(async () => {
    await d?.close();
  });

  /** RFC 5869 HKDF of KEY_ENCRYPTION_KEY (here the development one) and the tenant id. */
  const tenantKek = (id: string) =>
    Buffer.from(
      hkdfSync(
        'sha256',
        DEVELOPMENT_KEY_ENCRYPTION_KEY,
        Buffer.from(id),
        'issuer-kit tenant key sealing',
        32,
      ),
    );

  /** The token references of a tenant's keys, from its file or its rows (sealed per tenant). */
  async function tokenLabels(t: TestTenant): Promise<string[]> {
    const ctx = d.running.deployment.byId(t.id)!.ctx!;
    if (ctx.store.keys) {
      const rows = await ctx.store.keys.list();
      // A tenant's rows do not open under KEY_ENCRYPTION_KEY itself: its sealing key is its own.
      expect(() =>
        openSealedKey(DEVELOPMENT_KEY_ENCRYPTION_KEY, rows[0]!.kid, rows[0]!.purpose, rows[0]!.sealed),
      ).toThrow();
      return rows.map((row) => {
        const data = openSealedKey(tenantKek(t.id), row.kid, row.purpose, row.sealed) as {
          token: { label: string };
        };
        return data.token.label;
      });
    }
    const dir = join(d.dir, 'keys', 'tenants', t.id);
    return readdirSync(dir)
      .filter((f) => /^(credential-signing|partner-jwt)-.*\.json$/.test(f))
      .map(
        (f) => (JSON.parse(readFileSync(join(dir, f), 'utf8')) as { token: { label: string } }).token.label,
      );
  }

  it("labels each tenant's keys with its id, and each tenant signs with its own", async () => {
    for (const t of d.tenants) {
      const labels = await tokenLabels(t);
      expect(labels).toHaveLength(2);
      for (const label of labels) expect(label.startsWith(`${t.id}: issuer-kit `)).toBe(true);
      const ctx = d.running.deployment.byId(t.id)!.ctx!;
      expect(ctx.keys.current().signing.custody).toBe('pkcs11');
      const res = await d.admin(t, '/admin/issue-vc', {
        userId: `ada.${t.id}@example.org`,
        schemaId: 'membership-v1',
        ...adaMembership(),
      });
      expect(res.status).toBe(201);
    }
    const [a, b] = d.tenants as [TestTenant, TestTenant];
    const kidOf = (t: TestTenant) => d.running.deployment.byId(t.id)!.ctx!.keys.current().signing.kid;
    expect(kidOf(a)).not.toBe(kidOf(b));
  });
});
