import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/errors.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import {
  freshNonce,
  holderKey,
  offeredAccessToken,
  openid4vciWallet,
  proofJwt,
  sdJwtMembershipSchemas,
} from '../helpers/oid4vci-wallet.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

/**
 * Batch issuance on the OpenID4VCI door (OpenID4VCI 1.0 §8, docs/interface.md "OpenID4VCI: the wallet door"),
 * on both engines, driven by the `@openid4vc/openid4vci` wallet client: one request with ten proofs
 * (one nonce) gets ten credentials, each bound to its own key, with its own salts and its own
 * random status list index; the ten are recorded under one batch id and revoked together. Bad
 * batches answer the specification's error and issue nothing.
 */

const pg = await postgresAvailable('OpenID4VCI batch issuance on PostgreSQL');

describe.each([
  ['sqlite', true],
  ['postgres', pg],
] as const)('OpenID4VCI batch issuance (%s)', (engine, available) => {
  let issuer: TestIssuer;
  let db: TempDatabase | undefined;

  beforeAll(async () => {
    if (!available) return;
    const dir = tempDir();
    db = engine === 'postgres' ? await createMigratedDatabase() : undefined;
    issuer = await startIssuer({
      dir,
      env: {
        OID4VCI: 'on',
        SCHEMAS_DIR: sdJwtMembershipSchemas(dir),
        ...(db ? { DATABASE_URL: db.url } : {}),
      },
    });
  });
  afterAll(async () => {
    await issuer?.close();
    await db?.drop();
  });

  const tokenFor = () => offeredAccessToken(issuer);
  const nonce = () => freshNonce(issuer.url);

  const proofPayload = (c_nonce: string) => ({
    aud: issuer.url,
    iat: Math.floor(Date.now() / 1000),
    nonce: c_nonce,
  });

  async function credentialRequest(accessToken: string, body: Record<string, unknown>) {
    return fetch(`${issuer.url}/oid4vci/credential`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify(body),
    });
  }

  const oid4vciRows = async () =>
    Number(
      (
        await queryStore<{ n: number | string }>(
          issuer.ctx.store,
          "SELECT COUNT(*) AS n FROM issuances WHERE channel = 'oid4vci'",
        )
      )[0]!.n,
    );

  it.skipIf(!available)(
    'ten proofs, one nonce: ten credentials, each verifiable, own key, own salts, random distinct indexes; one batch id; revoked together',
    async () => {
      const metadata = (await (
        await fetch(`${issuer.url}/.well-known/openid-credential-issuer`)
      ).json()) as Record<string, any>;
      expect(metadata.batch_credential_issuance).toEqual({ batch_size: 10 });

      const keys = Array.from({ length: 10 }, () => holderKey());
      const wallet = openid4vciWallet(keys);
      const issuerMetadata = await wallet.resolveIssuerMetadata(issuer.url);
      const accessToken = await tokenFor();
      const { c_nonce } = await wallet.requestNonce({ issuerMetadata });
      const jwts: string[] = [];
      for (const key of keys)
        jwts.push(
          (
            await wallet.createCredentialRequestJwtProof({
              issuerMetadata,
              signer: key.signer,
              nonce: c_nonce,
              credentialConfigurationId: 'membership-v1',
            })
          ).jwt,
        );
      const { credentialResponse } = await wallet.retrieveCredentials({
        issuerMetadata,
        accessToken,
        credentialConfigurationId: 'membership-v1',
        proofs: { jwt: jwts },
      });
      const credentials = (credentialResponse.credentials ?? []).map(
        (c) => (c as { credential: string }).credential,
      );
      expect(credentials).toHaveLength(10);

      const payloads: Array<Record<string, any>> = [];
      for (const [i, compact] of credentials.entries()) {
        const verified = await verifySdJwtVc(issuer.url, compact);
        expect(verified.claims).toMatchObject({ givenName: 'Alice', tier: 'gold', memberNumber: 1042 });
        const payload = verified.payload as Record<string, any>;
        expect(payload.cnf.jwk).toEqual(keys[i]!.publicJwk);
        payloads.push(payload);
      }
      // Own salts and digests: no disclosure and no digest is shared between two credentials.
      const disclosures = credentials.flatMap((c) => c.split('~').slice(1, -1));
      expect(new Set(disclosures).size).toBe(disclosures.length);
      const digests = credentials.flatMap((c) => decodeJwt(c.split('~')[0]!)._sd as string[]);
      expect(new Set(digests).size).toBe(digests.length);
      // Random distinct indexes: ten different ones, not a run of consecutive numbers.
      const indexes = payloads.map((p) => p.status.status_list.idx as number);
      expect(new Set(indexes).size).toBe(10);
      const sorted = [...indexes].sort((a, b) => a - b);
      expect(sorted.at(-1)! - sorted[0]!).toBeGreaterThan(9);

      // History: one issuance per credential, under one batch id.
      const history = async (query: string) =>
        (await (await issuer.admin(`/admin/issuance-history?${query}`)).json()) as {
          data: Array<{ credentialId: string; holderDid: string; status: string }>;
        };
      const first = await history(`holderDid=${encodeURIComponent(payloads[0]!.sub)}`);
      expect(first.data).toHaveLength(1);
      const batchId = (
        await queryStore<{ batch_id: string }>(
          issuer.ctx.store,
          'SELECT batch_id FROM issuances WHERE credential_id = ?',
          [first.data[0]!.credentialId],
        )
      )[0]!.batch_id;
      expect(batchId).toMatch(/^batch-[0-9a-f]{32}$/);
      const batch = await history(`batchId=${batchId}&limit=50`);
      expect(batch.data.map((r) => r.holderDid).sort()).toEqual(payloads.map((p) => p.sub).sort());

      // One admin call revokes the batch; each credential's bit reads revoked.
      const started = await issuer.admin('/admin/status-changes', {
        change: 'revoke',
        selector: { batchId },
        reason: 'device lost',
        expectedCount: 10,
      });
      expect(started.status).toBe(202);
      const { jobId } = (await started.json()) as { jobId: string };
      await expect
        .poll(
          async () => ((await (await issuer.admin(`/admin/status-changes/${jobId}`)).json()) as any).state,
        )
        .toBe('done');
      for (const p of payloads) {
        const list = await (await fetch(p.status.status_list.uri)).text();
        expect(getListFromStatusListJWT(list).getStatus(p.status.status_list.idx)).toBe(1);
      }
      expect((await history(`batchId=${batchId}&status=revoked&limit=50`)).data).toHaveLength(10);
    },
  );

  it.skipIf(!available)(
    'POST /admin/revoke with batchId revokes every credential of the batch in one call; bad bodies and an unknown batch are refused',
    async () => {
      const keys = Array.from({ length: 3 }, () => holderKey());
      const c_nonce = await nonce();
      const res = await credentialRequest(await tokenFor(), {
        credential_configuration_id: 'membership-v1',
        proofs: { jwt: keys.map((k) => proofJwt(k, proofPayload(c_nonce))) },
      });
      expect(res.status).toBe(200);
      const credentials = ((await res.json()) as { credentials: Array<{ credential: string }> }).credentials;
      const payloads = credentials.map((c) => decodeJwt(c.credential.split('~')[0]!) as Record<string, any>);
      const batchId = (
        await queryStore<{ batch_id: string }>(
          issuer.ctx.store,
          'SELECT batch_id FROM issuances WHERE holder_did = ?',
          [payloads[0]!.sub],
        )
      )[0]!.batch_id;

      await expectError(
        await issuer.admin('/admin/revoke', { batchId, revocationNonce: '1', reason: 'lost' }),
        400,
        'INVALID_PARAMETER',
        'batchId',
      );
      await expectError(await issuer.admin('/admin/revoke', { batchId }), 400, 'INVALID_PARAMETER', 'reason');
      await expectError(
        await issuer.admin('/admin/revoke', { batchId: 'batch-unknown', reason: 'lost' }),
        404,
        'NOT_FOUND',
        'batchId',
      );
      for (const p of payloads) {
        const list = await (await fetch(p.status.status_list.uri)).text();
        expect(getListFromStatusListJWT(list).getStatus(p.status.status_list.idx)).toBe(0);
      }

      const revoked = await issuer.admin('/admin/revoke', { batchId, reason: 'phone stolen' });
      expect(revoked.status).toBe(202);
      expect(await revoked.json()).toMatchObject({ batchId, state: 'done', count: 3, done: 3, failed: 0 });
      for (const p of payloads) {
        const list = await (await fetch(p.status.status_list.uri)).text();
        expect(getListFromStatusListJWT(list).getStatus(p.status.status_list.idx)).toBe(1);
      }
      const history = (await (
        await issuer.admin(`/admin/issuance-history?batchId=${batchId}&status=revoked&limit=50`)
      ).json()) as { data: unknown[] };
      expect(history.data).toHaveLength(3);
      // Each credential's revocation is audited under the admin's reason.
      const audited = await queryStore<{ n: number | string }>(
        issuer.ctx.store,
        "SELECT COUNT(*) AS n FROM audit_log WHERE action = 'revoke' AND reason = 'phone stolen' AND job_id IS NOT NULL",
      );
      expect(Number(audited[0]!.n)).toBe(3);
    },
  );

  it.skipIf(!available)(
    'more proofs than batch_size, different nonces, one key twice, a mix of proof types: refused, nothing issued, the offer still open',
    async () => {
      const before = await oid4vciRows();
      const accessToken = await tokenFor();
      const keys = Array.from({ length: 11 }, () => holderKey());
      const expectRefused = async (res: Response, error: string) => {
        const body = (await res.json()) as { error: string };
        expect({ status: res.status, error: body.error }).toEqual({ status: 400, error });
      };

      const one = await nonce();
      await expectRefused(
        await credentialRequest(accessToken, {
          credential_configuration_id: 'membership-v1',
          proofs: { jwt: keys.map((k) => proofJwt(k, proofPayload(one))) },
        }),
        'invalid_credential_request',
      );
      const [a, b] = [await nonce(), await nonce()];
      await expectRefused(
        await credentialRequest(accessToken, {
          credential_configuration_id: 'membership-v1',
          proofs: { jwt: [proofJwt(keys[0]!, proofPayload(a)), proofJwt(keys[1]!, proofPayload(b))] },
        }),
        'invalid_proof',
      );
      const c = await nonce();
      await expectRefused(
        await credentialRequest(accessToken, {
          credential_configuration_id: 'membership-v1',
          proofs: { jwt: [proofJwt(keys[2]!, proofPayload(c)), proofJwt(keys[2]!, proofPayload(c))] },
        }),
        'invalid_proof',
      );
      const d = await nonce();
      await expectRefused(
        await credentialRequest(accessToken, {
          credential_configuration_id: 'membership-v1',
          proofs: { jwt: [proofJwt(keys[3]!, proofPayload(d))], attestation: ['x.y.z'] },
        }),
        'invalid_credential_request',
      );
      expect(await oid4vciRows()).toBe(before);

      // The same access token still gets its batch.
      const e = await nonce();
      const ok = await credentialRequest(accessToken, {
        credential_configuration_id: 'membership-v1',
        proofs: { jwt: keys.slice(0, 3).map((k) => proofJwt(k, proofPayload(e))) },
      });
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { credentials: unknown[] }).credentials).toHaveLength(3);
      expect(await oid4vciRows()).toBe(before + 3);
    },
  );
});
