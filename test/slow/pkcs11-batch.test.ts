import { renameSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import {
  freshNonce,
  holderKey,
  offeredAccessToken,
  proofJwt,
  sdJwtMembershipSchemas,
} from '../helpers/oid4vci-wallet.js';
import { processToken, softHsmAvailable } from '../helpers/softhsm.js';

const available = softHsmAvailable('the PKCS#11 batch test');

// docs/interface.md "OpenID4VCI: the wallet door" (batch issuance) and docs/security.md
// "Keys in a hardware security module" (token down): an OpenID4VCI batch of ten signed in a SoftHSM2 token, the token's directory taken away
// after the third credential of the batch is signed. The wallet gets 503 UNAVAILABLE naming the
// key backend, no credential of the batch is recorded (not the three signed before), nothing is
// audited; once the directory is back, the same access token gets the whole batch.
describe.skipIf(!available)('KEY_BACKEND=pkcs11: the token taken away in the middle of a batch', () => {
  let issuer: TestIssuer;
  let tokenDir: string;
  beforeAll(async () => {
    const token = processToken();
    tokenDir = token.tokenDir;
    const dir = tempDir();
    issuer = await startIssuer({
      dir,
      env: { ...token.env, OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(dir) },
    });
  });
  afterAll(async () => {
    if (issuer) issuer.ctx.issuance.phaseTimer = undefined;
    await issuer?.close();
  });

  const count = async (sql: string) =>
    Number((await queryStore<{ n: number | string }>(issuer.ctx.store, sql))[0]!.n);
  const batchRequest = async (accessToken: string, keys: ReturnType<typeof holderKey>[]) => {
    const nonce = await freshNonce(issuer.url);
    const payload = { aud: issuer.url, iat: Math.floor(Date.now() / 1000), nonce };
    return fetch(`${issuer.url}/oid4vci/credential`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({
        credential_configuration_id: 'membership-v1',
        proofs: { jwt: keys.map((k) => proofJwt(k, payload)) },
      }),
    });
  };

  it('503 with nothing recorded while the token is away mid-batch; the retry after it is back gets all ten', async () => {
    expect(issuer.ctx.keys.current().signing.custody).toBe('pkcs11');
    const keys = Array.from({ length: 10 }, () => holderKey());
    const accessToken = await offeredAccessToken(issuer);
    const rowsBefore = await count("SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'");
    const auditBefore = await count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'issue'");

    // The token goes away once three credentials of the batch are signed.
    let signed = 0;
    issuer.ctx.issuance.phaseTimer = (phase) => {
      if (phase === 'sign' && ++signed === 3) renameSync(tokenDir, `${tokenDir}.away`);
    };
    let refused: Response;
    try {
      refused = await batchRequest(accessToken, keys);
    } finally {
      issuer.ctx.issuance.phaseTimer = undefined;
      if (signed >= 3) renameSync(`${tokenDir}.away`, tokenDir);
    }
    expect(signed).toBe(3);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toMatch(/application\/json/);
    // A server-side fault, so the kit's error body (docs/interface.md "Errors"), naming the backend.
    const body = (await refused.json()) as { code: string; message: string; details: unknown };
    expect(body.code).toBe('UNAVAILABLE');
    expect(body.details).toEqual({ keyBackend: 'pkcs11' });
    expect(body.message).not.toMatch(/CKR_|pkcs11js/);
    // Nothing half-recorded: none of the batch, not the three signed before the token went away.
    expect(await count("SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'")).toBe(rowsBefore);
    expect(await count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'issue'")).toBe(auditBefore);

    // Back: the same access token (the offer stayed open) gets the whole batch with a new nonce.
    await expect.poll(async () => (await fetch(`${issuer.url}/readyz`)).status).toBe(200);
    const res = await batchRequest(accessToken, keys);
    expect(res.status, await res.clone().text()).toBe(200);
    const { credentials } = (await res.json()) as { credentials: Array<{ credential: string }> };
    expect(credentials).toHaveLength(10);
    const indexes: number[] = [];
    for (const [i, { credential }] of credentials.entries()) {
      const verified = await verifySdJwtVc(issuer.url, credential);
      const payload = verified.payload as Record<string, any>;
      expect(payload.cnf.jwk).toEqual(keys[i]!.publicJwk);
      indexes.push(payload.status.status_list.idx);
    }
    expect(new Set(indexes).size).toBe(10);
    expect(await count("SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'")).toBe(
      rowsBefore + 10,
    );
  });
});
