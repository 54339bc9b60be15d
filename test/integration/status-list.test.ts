import { digest } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { createLocalJWKSet, decodeProtectedHeader, type JWK, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fetchList,
  type IssuedSdJwt,
  issueInProcess,
  issueOverHttp,
  seedMembers,
} from '../fixtures/status.js';
import { expectError } from '../helpers/errors.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { startIssuer, TEST_ADMIN_API_KEY, type TestIssuer } from '../helpers/issuer.js';

// docs/interface.md: revoke, revocation-status, statuslist, publish-token-status-list; docs/interface.md "Public routes";
// draft-ietf-oauth-status-list (1-bit lists, the default partition size).
describe('token status lists and revocation (1-bit)', () => {
  let issuer: TestIssuer;
  let users: string[];
  let next = 0;
  const issue = () => issueInProcess(issuer, users[next++]!);

  beforeAll(async () => {
    issuer = await startIssuer();
    users = await seedMembers(issuer, 'one-bit', 20);
  });
  afterAll(async () => {
    await issuer.close();
  });

  async function verifier() {
    const { keys } = (
      (await (await fetch(`${issuer.url}/.well-known/jwt-vc-issuer`)).json()) as {
        jwks: { keys: JWK[] };
      }
    ).jwks;
    const jwks = createLocalJWKSet({ keys });
    const fetched: string[] = [];
    // A wallet-side verifier: @sd-jwt/sd-jwt-vc, keys from jwt-vc-issuer, the list fetched over HTTP.
    const sdjwt = new SDJwtVcInstance({
      hasher: digest,
      verifier: async (data, signature) => {
        try {
          await jwtVerify(`${data}.${signature}`, jwks);
          return true;
        } catch {
          return false;
        }
      },
      statusListFetcher: async (uri) => {
        const res = await fetch(uri, { headers: { accept: 'application/statuslist+jwt' } });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe('application/statuslist+jwt');
        const jwt = await res.text();
        // draft-ietf-oauth-status-list §5.1, §8.3: typ, and sub equal to the URI the credential names.
        const { payload, protectedHeader } = await jwtVerify(jwt, jwks, { typ: 'statuslist+jwt' });
        expect(payload.sub).toBe(uri);
        expect(protectedHeader.kid).toBe(issuer.ctx.keys.current().signing.kid);
        fetched.push(jwt);
        return jwt;
      },
    });
    return { sdjwt, fetched };
  }

  const revoke = (body: unknown) => issuer.admin('/admin/revoke', body);
  const revocationStatus = (nonce: string) => fetch(`${issuer.url}/revocation-status/${nonce}`);

  it('a credential verifies with its status list until it is revoked, then fails on status', async () => {
    const vc = await issueOverHttp(issuer, users[next++]!);
    expect(vc.uri).toBe(`${issuer.url}/statuslist/0`);
    expect(Number.isInteger(vc.idx) && vc.idx >= 0 && vc.idx < 131072).toBe(true);

    const { sdjwt, fetched } = await verifier();
    const valid = await sdjwt.verify(vc.compact);
    expect(valid.payload.status).toEqual({ status_list: { idx: vc.idx, uri: vc.uri } });
    expect(fetched).toHaveLength(1);
    expect((await verifySdJwtVc(issuer.url, vc.compact)).payload.iss).toBe(issuer.url);

    const res = await revoke({ revocationNonce: vc.nonce });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ revocationNonce: vc.nonce, isRevoked: true });
    expect(Number.isNaN(Date.parse(body.revokedAt as string))).toBe(false);

    // The same verification now fails, and only on status: the freshly fetched list says INVALID.
    await expect(sdjwt.verify(vc.compact)).rejects.toThrow();
    expect(fetched).toHaveLength(2);
    const { getListFromStatusListJWT } = await import('@sd-jwt/jwt-status-list');
    expect(getListFromStatusListJWT(fetched[0]!).getStatus(vc.idx)).toBe(0);
    expect(getListFromStatusListJWT(fetched[1]!).getStatus(vc.idx)).toBe(1);
    await expect(verifySdJwtVc(issuer.url, vc.compact)).rejects.toThrow();
  });

  it('revoking through the route reaches /revocation-status and the list at once', async () => {
    const [a, b] = [await issue(), await issue()];
    const before = await fetchList(a.uri);
    expect(before.list.getStatus(a.idx)).toBe(0);
    expect(await (await revocationStatus(a.nonce)).json()).toEqual({ isRevoked: false, status: 'valid' });

    // `nonce` is accepted as an alias, a JSON number too, and proofType narrows the match.
    const res = await revoke({ nonce: Number(a.nonce), proofType: 'SD_JWT_VC' });
    expect(res.status).toBe(200);
    expect(await (await revocationStatus(a.nonce)).json()).toEqual({ isRevoked: true, status: 'revoked' });
    const after = await fetchList(a.uri);
    expect(after.etag).not.toBe(before.etag);
    expect(after.list.getStatus(a.idx)).toBe(1);
    expect(after.list.getStatus(b.idx)).toBe(0);
    expect(await (await revocationStatus(b.nonce)).json()).toEqual({ isRevoked: false, status: 'valid' });
  });

  it('revoking twice answers 200 with the first revokedAt; revoked is final', async () => {
    const vc = await issue();
    const first = (await (await revoke({ revocationNonce: vc.nonce })).json()) as { revokedAt: string };
    const etag = (await fetchList(vc.uri)).etag;
    const again = await revoke({ revocationNonce: vc.nonce });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({
      revocationNonce: vc.nonce,
      isRevoked: true,
      revokedAt: first.revokedAt,
    });
    // Nothing changed, so the cached token stays.
    expect((await fetchList(vc.uri)).etag).toBe(etag);
  });

  it('GET /statuslist/:partition is a signed statuslist+jwt with sub, iat, exp, ttl and status_list', async () => {
    await issue();
    const res = await fetch(`${issuer.url}/statuslist/0`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/statuslist+jwt');
    expect(res.headers.get('cache-control')).toMatch(/(^|[ ,])max-age=300($|[ ,])/);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-expose-headers')).toMatch(/ETag/i);
    const jwt = await res.text();
    expect(decodeProtectedHeader(jwt)).toEqual({
      alg: 'ES256',
      typ: 'statuslist+jwt',
      kid: issuer.ctx.keys.current().signing.kid,
    });
    const { keys } = (
      (await (await fetch(`${issuer.url}/.well-known/jwt-vc-issuer`)).json()) as {
        jwks: { keys: JWK[] };
      }
    ).jwks;
    const { payload } = await jwtVerify(jwt, createLocalJWKSet({ keys }), { typ: 'statuslist+jwt' });
    expect(Object.keys(payload).sort()).toEqual(['exp', 'iat', 'status_list', 'sub', 'ttl']);
    expect(payload.sub).toBe(`${issuer.url}/statuslist/0`);
    expect(payload.ttl).toBe(300);
    expect(payload.exp!).toBeGreaterThan(payload.iat!);
    const statusList = payload.status_list as { bits: number; lst: string };
    expect(statusList.bits).toBe(1);
    expect(typeof statusList.lst).toBe('string');

    // A browser preflight on the public list is answered with open CORS.
    const preflight = await fetch(`${issuer.url}/statuslist/0`, {
      method: 'OPTIONS',
      headers: { origin: 'https://verifier.example', 'access-control-request-method': 'GET' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('ETag and If-None-Match answer 304 while the list is unchanged', async () => {
    await issue();
    const first = await fetch(`${issuer.url}/statuslist/0`);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[^"]+"$/);
    const cached = await fetch(`${issuer.url}/statuslist/0`, { headers: { 'if-none-match': etag } });
    expect(cached.status).toBe(304);
    expect(cached.headers.get('etag')).toBe(etag);
    expect(await cached.text()).toBe('');
    const listed = await fetch(`${issuer.url}/statuslist/0`, {
      headers: { 'if-none-match': `"other", ${etag}` },
    });
    expect(listed.status).toBe(304);
    const stale = await fetch(`${issuer.url}/statuslist/0`, { headers: { 'if-none-match': '"other"' } });
    expect(stale.status).toBe(200);
    expect(stale.headers.get('etag')).toBe(etag);
  });

  it('POST /admin/publish-token-status-list re-signs every partition', async () => {
    await issue();
    const before = await fetchList(`${issuer.url}/statuslist/0`);
    const res = await issuer.admin('/admin/publish-token-status-list', {});
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      partitions: Array<{ partition: number; uri: string; size: number; iat: number }>;
    };
    expect(body.partitions).toHaveLength(1);
    expect(body.partitions[0]).toMatchObject({
      partition: 0,
      uri: `${issuer.url}/statuslist/0`,
      size: 131072,
    });
    expect(Number.isInteger(body.partitions[0]!.iat)).toBe(true);
    const after = await fetchList(`${issuer.url}/statuslist/0`);
    expect(after.etag).not.toBe(before.etag);
    const { payload } = await jwtVerify(
      after.jwt,
      createLocalJWKSet({ keys: [issuer.ctx.keys.current().signing.publicJwk as JWK] }),
    );
    expect(payload.iat).toBe(body.partitions[0]!.iat);
  });

  it('suspension needs 2-bit lists: 400 with STATUS_LIST_BITS=1', async () => {
    const vc = await issue();
    for (const path of ['/admin/suspend', '/admin/unsuspend']) {
      const res = await issuer.admin(path, { revocationNonce: vc.nonce });
      await expectError(res, 400, 'INVALID_PARAMETER');
    }
    expect(await (await revocationStatus(vc.nonce)).json()).toEqual({ isRevoked: false, status: 'valid' });
  });

  describe('bad inputs', () => {
    let vc: IssuedSdJwt;
    beforeAll(async () => {
      vc = await issue();
    });

    const badNonces = [
      '-1',
      '2^53',
      '1.5',
      'abc',
      '9007199254740992',
      '1e3',
      ' 1',
      '0x10',
      '99999999999999999',
    ];

    it.each(badNonces)('GET /revocation-status/%s → 400', async (nonce) => {
      const res = await revocationStatus(encodeURIComponent(nonce));
      await expectError(res, 400, 'INVALID_PARAMETER');
    });

    it.each<unknown>([...badNonces, -1, 1.5, 2 ** 53, 2 ** 53 + 2, 1e21, true, null, {}, ''])(
      'POST /admin/revoke { revocationNonce: %j } → 400',
      async (nonce) => {
        for (const field of ['revocationNonce', 'nonce']) {
          const res = await revoke({ [field]: nonce });
          await expectError(res, 400, 'INVALID_PARAMETER');
        }
      },
    );

    it('a missing nonce, a bad proofType or a non-object body → 400', async () => {
      for (const body of [
        {},
        { proofType: 'SD_JWT_VC' },
        { revocationNonce: vc.nonce, proofType: 'NOPE' },
        [],
      ]) {
        const res = await revoke(body);
        await expectError(res, 400, 'INVALID_PARAMETER');
      }
    });

    it('an unknown nonce → 404 on every route; a proofType that does not match → 404', async () => {
      const unknown = vc.nonce === '1' ? '2' : '1';
      for (const path of ['/admin/revoke', '/admin/suspend', '/admin/unsuspend']) {
        const res = await issuer.admin(path, { revocationNonce: unknown });
        await expectError(res, 404, 'NOT_FOUND');
      }
      const status = await revocationStatus(unknown);
      await expectError(status, 404, 'NOT_FOUND');
      const wrongType = await revoke({ revocationNonce: vc.nonce, proofType: 'BJJ_SIG_2021' });
      expect(wrongType.status).toBe(404);
      expect(await (await revocationStatus(vc.nonce)).json()).toEqual({ isRevoked: false, status: 'valid' });
    });

    it('admin routes need x-admin-api-key (403) and refuse browsers', async () => {
      const noKey = await fetch(`${issuer.url}/admin/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ revocationNonce: vc.nonce }),
      });
      expect(noKey.status).toBe(403);
      const fromPage = await fetch(`${issuer.url}/admin/publish-token-status-list`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-admin-api-key': TEST_ADMIN_API_KEY,
          origin: 'https://evil.example',
        },
        body: '{}',
      });
      expect(fromPage.status).toBe(403);
      expect(fromPage.headers.get('access-control-allow-origin')).toBeNull();
    });

    it.each(['abc', '-1', '1.5', '01', '1e3'])('GET /statuslist/%s → 400', async (p) => {
      const res = await fetch(`${issuer.url}/statuslist/${p}`);
      await expectError(res, 400, 'INVALID_PARAMETER');
    });

    it.each(['7', '99999999999', '123456789012345678901234'])(
      'an unknown partition (%s) → 404 JSON',
      async (p) => {
        const res = await fetch(`${issuer.url}/statuslist/${p}`);
        await expectError(res, 404, 'NOT_FOUND');
      },
    );
  });
});
