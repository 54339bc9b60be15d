import { renameSync } from 'node:fs';
import { compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import pkcs11js from 'pkcs11js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { adaMembership } from '../helpers/direct-issue.js';
import { TEST_STORE } from '../helpers/issuer.js';
import { processToken, softHsmAvailable } from '../helpers/softhsm.js';
import { startTenants, type TestTenant, type TestTenants } from '../helpers/tenants.js';

const available = softHsmAvailable('the tenants sharing one PKCS#11 session pool test');

const TENANTS = 20;
const POOL = 4;

/**
 * The sessions open on the token through this process's PKCS#11 library, counted at the library's
 * own calls (SoftHSM2 reports no ulSessionCount in C_GetTokenInfo): each C_OpenSession adds one,
 * C_CloseSession takes one away, C_Finalize closes them all.
 */
function countSessions() {
  const proto = pkcs11js.PKCS11.prototype;
  const original = {
    open: proto.C_OpenSession,
    close: proto.C_CloseSession,
    finalize: proto.C_Finalize,
  };
  const count = { open: 0, most: 0 };
  proto.C_OpenSession = function (this: pkcs11js.PKCS11, ...args: Parameters<typeof original.open>) {
    const session = original.open.apply(this, args);
    count.most = Math.max(count.most, ++count.open);
    return session;
  };
  proto.C_CloseSession = function (this: pkcs11js.PKCS11, ...args: Parameters<typeof original.close>) {
    original.close.apply(this, args);
    count.open--;
  };
  proto.C_Finalize = function (this: pkcs11js.PKCS11) {
    original.finalize.apply(this);
    count.open = 0;
  };
  return {
    count,
    restore() {
      proto.C_OpenSession = original.open;
      proto.C_CloseSession = original.close;
      proto.C_Finalize = original.finalize;
    },
  };
}

// docs/several-issuers.md "Where the data lives": the tenants of a deployment share one login and
// one pool of PKCS11_MAX_SESSIONS sessions on their token, each signing with its own keys.
describe.skipIf(!available)(`${TENANTS} tenants on one PKCS#11 token (SoftHSM2, ${TEST_STORE})`, () => {
  let d: TestTenants;
  let sessions: ReturnType<typeof countSessions>;
  let n = 0;

  beforeAll(async () => {
    const token = processToken();
    sessions = countSessions();
    d = await startTenants(TENANTS, { env: { ...token.env, PKCS11_MAX_SESSIONS: String(POOL) } });
  });
  afterAll(async () => {
    await d?.close();
    sessions?.restore();
  });

  /** A direct issuance by `t`, opened as its holder: its status, and the SD-JWT's header and signature check. */
  async function issue(t: TestTenant): Promise<{ status: number; code?: string; kid?: string }> {
    const email = `ada.${t.id}.${n++}@example.org`;
    const res = await d.admin(t, '/admin/issue-vc', {
      userId: email,
      schemaId: 'membership-v1',
      ...adaMembership(),
    });
    const body = (await res.json()) as { credentialId?: string; code?: string };
    if (res.status !== 201) return { status: res.status, ...(body.code ? { code: body.code } : {}) };
    const holder = t.emulator.emulator.state.holderByEmail(email)!;
    const envelope = t.emulator.emulator.state.envelopes.get(body.credentialId!)!.envelope;
    const jwt = (openEnvelope(privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex), envelope) as string).split(
      '~',
    )[0]!;
    const { kid } = decodeProtectedHeader(jwt);
    // Verified with its own tenant's signing key, and with no other tenant's.
    const keyOf = (id: string) =>
      importJWK(d.running.deployment.byId(id)!.ctx!.keys.current().signing.publicJwk as JWK, 'ES256');
    await compactVerify(jwt, await keyOf(t.id));
    const other = d.tenants.find((o) => o.id !== t.id)!;
    await expect(compactVerify(jwt, await keyOf(other.id))).rejects.toThrow();
    return { status: res.status, kid: kid! };
  }

  it('each tenant signs with its own key while the open sessions stay within the pool', async () => {
    expect(d.tenants).toHaveLength(TENANTS);
    // Every tenant's keys are in the token (made at its first start), and fewer sessions than
    // tenants were ever open: one pool, not one per tenant. (The test files of a vitest worker share
    // one module graph: a module an earlier file loaded may already hold open sessions, which this
    // count does not see; what it sees never passes the pool.)
    expect(sessions.count.most).toBeLessThanOrEqual(POOL);
    // Three issuances per tenant at once: 60 signatures in flight against a pool of four.
    const results = await Promise.all(d.tenants.flatMap((t) => [issue(t), issue(t), issue(t)]));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 201));
    for (const [i, t] of d.tenants.entries()) {
      const own = d.running.deployment.byId(t.id)!.ctx!.keys.current().signing.kid;
      expect(results.slice(i * 3, i * 3 + 3).map((r) => r.kid)).toEqual([own, own, own]);
    }
    expect(new Set(results.map((r) => r.kid)).size).toBe(TENANTS);
    expect(sessions.count.most).toBeLessThanOrEqual(POOL);
    expect(sessions.count.open).toBeLessThanOrEqual(POOL);
  });

  it('recovers without a restart when the token goes away and comes back', async () => {
    const { tokenDir } = processToken();
    const [a, b] = d.tenants as [TestTenant, TestTenant];
    renameSync(tokenDir, `${tokenDir}.away`);
    try {
      const away = await Promise.all([issue(a), issue(b)]);
      expect(away).toEqual([
        { status: 503, code: 'UNAVAILABLE' },
        { status: 503, code: 'UNAVAILABLE' },
      ]);
    } finally {
      renameSync(`${tokenDir}.away`, tokenDir);
    }
    const back = await Promise.all(d.tenants.map((t) => issue(t)));
    expect(back.map((r) => r.status)).toEqual(back.map(() => 201));
    expect(sessions.count.most).toBeLessThanOrEqual(POOL);
  });
});
