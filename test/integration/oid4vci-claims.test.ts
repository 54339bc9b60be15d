import { sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queryStore, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { type HolderKey, holderKey, sdJwtMembershipSchemas } from '../helpers/oid4vci-wallet.js';

/**
 * The claims of an OpenID4VCI credential request are checked against the schema once (OpenID4VCI
 * 1.0 §8; docs/interface.md "OpenID4VCI: the wallet door"): the claims provider's by the channel,
 * whose misfit denies the request and issues nothing; the admin's, stored with the offer, by the
 * issuance core as it signs.
 */

const PRE_AUTH = 'urn:ietf:params:oauth:grant-type:pre-authorized_code';
const USER = 'claims-once-user';
const VALID = {
  givenName: 'Dana',
  familyName: 'Ortiz',
  memberSince: '2020-01-01',
  tier: 'gold',
  memberNumber: 7,
};

let issuer: TestIssuer;

async function setProviderClaims(claims: Record<string, unknown>): Promise<void> {
  await queryStore(
    issuer.ctx.store,
    "INSERT OR REPLACE INTO claims (user_id, schema_id, claims, updated_at) VALUES (?, 'membership-v1', ?, ?)",
    [USER, JSON.stringify(claims), new Date().toISOString()],
  );
}

async function offer(body: Record<string, unknown>): Promise<{ offerId: string; code: string }> {
  const res = await issuer.admin('/admin/credential-offers', { schemaId: 'membership-v1', ...body });
  expect(res.status, await res.clone().text()).toBe(201);
  const o = (await res.json()) as {
    offerId: string;
    credentialOffer: { grants: Record<string, { 'pre-authorized_code': string }> };
  };
  return { offerId: o.offerId, code: o.credentialOffer.grants[PRE_AUTH]!['pre-authorized_code'] };
}

function proofJwt(key: HolderKey, nonce: string): string {
  const header = { alg: 'ES256', typ: 'openid4vci-proof+jwt', jwk: key.publicJwk };
  const payload = { aud: issuer.url, iat: Math.floor(Date.now() / 1000), nonce };
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const signature = sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

/** Token, nonce and a valid proof: the credential request a well-behaved wallet sends. */
async function redeem(code: string): Promise<Response> {
  const tokenRes = await fetch(`${issuer.url}/oid4vci/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: PRE_AUTH, 'pre-authorized_code': code }).toString(),
  });
  expect(tokenRes.status).toBe(200);
  const { access_token } = (await tokenRes.json()) as { access_token: string };
  const nonceRes = await fetch(`${issuer.url}/oid4vci/nonce`, { method: 'POST' });
  const { c_nonce } = (await nonceRes.json()) as { c_nonce: string };
  return fetch(`${issuer.url}/oid4vci/credential`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${access_token}` },
    body: JSON.stringify({
      credential_configuration_id: 'membership-v1',
      proofs: { jwt: [proofJwt(holderKey(), c_nonce)] },
    }),
  });
}

async function oid4vciIssuances(): Promise<number> {
  const rows = await queryStore<{ n: number | string }>(
    issuer.ctx.store,
    "SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'",
  );
  return Number(rows[0]!.n);
}

beforeAll(async () => {
  const dir = tempDir();
  issuer = await startIssuer({ dir, env: { OID4VCI: 'on', SCHEMAS_DIR: sdJwtMembershipSchemas(dir) } });
}, 120_000);
afterAll(async () => {
  await issuer?.close();
});

describe('claims checked once per credential request', () => {
  it('the claims provider’s claims: checked once; a misfit at redemption is credential_request_denied', async () => {
    await setProviderClaims(VALID);
    const checks = vi.spyOn(issuer.ctx.schemas, 'assertClaims');
    try {
      const good = await offer({ userId: USER });
      checks.mockClear();
      const res = await redeem(good.code);
      expect(res.status, await res.clone().text()).toBe(200);
      expect(checks).toHaveBeenCalledTimes(1);

      const bad = await offer({ userId: USER });
      await setProviderClaims({ ...VALID, tier: 7 });
      const before = await oid4vciIssuances();
      checks.mockClear();
      const refused = await redeem(bad.code);
      expect(checks).toHaveBeenCalledTimes(1);
      const body = (await refused.json()) as { error: string; error_description: string };
      expect({ status: refused.status, error: body.error }).toEqual({
        status: 400,
        error: 'credential_request_denied',
      });
      expect(await oid4vciIssuances()).toBe(before);
    } finally {
      checks.mockRestore();
    }
  });

  it('the admin’s claims, stored with the offer: checked once, by the core as it signs', async () => {
    const checks = vi.spyOn(issuer.ctx.schemas, 'assertClaims');
    try {
      const o = await offer({ email: 'dana@example.org', claims: VALID });
      checks.mockClear();
      const res = await redeem(o.code);
      expect(res.status, await res.clone().text()).toBe(200);
      expect(checks).toHaveBeenCalledTimes(1);
    } finally {
      checks.mockRestore();
    }
  });
});
