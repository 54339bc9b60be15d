import { globalAgent } from 'node:https';
import { Kms } from '@credo-ts/core';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credoHolder, credoVerifier, newKeyBinding } from '../helpers/credo.js';
import { queryStore } from '../helpers/issuer.js';
import {
  issuerKeyOf,
  type Mode,
  meecoVerify,
  type Running,
  start,
  stop,
  trustingFetch,
} from '../helpers/issuer-modes.js';
import { holderKey, receiveWithOpenid4vci } from '../helpers/oid4vci-wallet.js';

/**
 * The OpenID4VCI door (docs/interface.md "OpenID4VCI: the wallet door") driven over HTTP on
 * loopback by two holder implementations nobody here wrote, in each SD_JWT_ISSUER mode:
 * - the `@openid4vc/openid4vci` client (oid4vc-ts), with and without a transaction code, and with
 *   DPoP;
 * - Credo's holder (`@credo-ts/openid4vc` 0.6.3), which uses DPoP whenever the authorization server
 *   offers it and verifies what it receives before keeping it (did:web and x5c: Credo supports no
 *   other way to find an issuer key).
 * In x5c mode the issuer requires server-provided DPoP nonces (OID4VCI_DPOP_NONCE=required).
 * In x5c mode Credo also takes a batch of ten (OpenID4VCI 1.0 §8, one key each) and sees it revoked.
 * Every credential is checked by Meeco's `@meeco/sd-jwt` (and Credo's verifier where it applies)
 * with the issuer key found the mode's way, and after `/admin/revoke` its status list bit reads
 * revoked.
 */

interface Offer {
  offerUri: string;
  txCode?: string;
}

describe.each(['url', 'did:web', 'x5c'] as const)('SD_JWT_ISSUER=%s', (mode: Mode) => {
  let r: Running;
  let savedCa: typeof globalAgent.options.ca;
  // did:web: the issuer is https on loopback with a development CA that node's https agent trusts
  // (node-fetch uses that agent; the global fetch does not).
  let walletFetch: typeof fetch;
  beforeAll(async () => {
    // x5c mode also requires server-provided DPoP nonces (RFC 9449 §8): both wallets retry on
    // use_dpop_nonce by themselves.
    r = await start(mode, { OID4VCI: 'on', ...(mode === 'x5c' ? { OID4VCI_DPOP_NONCE: 'required' } : {}) });
    savedCa = globalAgent.options.ca;
    if (mode === 'did:web') globalAgent.options.ca = r.caPem;
    walletFetch = mode === 'did:web' ? await trustingFetch() : fetch;
  }, 300_000);
  afterAll(async () => {
    globalAgent.options.ca = savedCa;
    await stop(r);
  });

  async function offer(body: Record<string, unknown> = {}): Promise<Offer> {
    const res = await r.issuer.admin('/admin/credential-offers', {
      schemaId: 'membership-v1',
      userId: 'demo-user-1',
      ...body,
    });
    expect(res.status, await res.clone().text()).toBe(201);
    return (await res.json()) as Offer;
  }

  /** Meeco's verification with the key found the mode's way; the payload. */
  async function verified(credential: string): Promise<Record<string, any>> {
    const payload = (await meecoVerify(credential, (h) => issuerKeyOf(r, mode, h))) as Record<string, any>;
    expect(payload).toMatchObject({ givenName: 'Alice', tier: 'gold', memberNumber: 1042 });
    return payload;
  }

  /** Revoked through the admin route: the status list bit the credential points to reads 1. */
  async function expectRevocable(payload: Record<string, any>) {
    const history = (await (
      await r.issuer.admin(`/admin/issuance-history?holderDid=${encodeURIComponent(payload.sub)}`)
    ).json()) as { data: Array<{ revocationNonce: string; channel: string }> };
    expect(history.data).toHaveLength(1);
    expect(history.data[0]!.channel).toBe('oid4vci');
    const revoke = await r.issuer.admin('/admin/revoke', {
      revocationNonce: history.data[0]!.revocationNonce,
    });
    expect(revoke.status).toBe(200);
    const { idx, uri } = payload.status.status_list as { idx: number; uri: string };
    expect(uri.startsWith(`${r.origin}/statuslist/`)).toBe(true);
    const list = await (await walletFetch(uri)).text();
    expect(getListFromStatusListJWT(list).getStatus(idx)).toBe(1);
  }

  it('@openid4vc/openid4vci: receives a verifiable credential bound to its key, then sees it revoked', async () => {
    const { credential, holder } = await receiveWithOpenid4vci((await offer()).offerUri, {
      fetch: walletFetch,
    });
    const payload = await verified(credential);
    expect(payload.cnf.jwk).toEqual(holder.publicJwk);
    expect(payload.iss).toBe(
      mode === 'did:web' ? `did:web:${new URL(r.origin).host.replace(':', '%3A')}` : r.origin,
    );
    if (mode !== 'url') {
      const agent = credoVerifier({
        trustedCertificates: mode === 'x5c' ? [r.caPem] : undefined,
        fetch: walletFetch,
        allowInsecureHttpUrls: mode === 'x5c',
      });
      const result = await agent.sdJwtVc.verify({ compactSdJwtVc: credential });
      if (!result.isValid) throw result.error;
    }
    await expectRevocable(payload);
  });

  it('@openid4vc/openid4vci: with a transaction code, and with DPoP', async () => {
    const withCode = await offer({ txCode: true });
    const a = await receiveWithOpenid4vci(withCode.offerUri, { txCode: withCode.txCode, fetch: walletFetch });
    await verified(a.credential);
    const b = await receiveWithOpenid4vci((await offer()).offerUri, {
      dpop: holderKey(),
      fetch: walletFetch,
    });
    await expectRevocable(await verified(b.credential));
  });

  if (mode !== 'url') {
    it('Credo holder (@credo-ts/openid4vc): offer, token (DPoP), nonce, proof, credential it verified itself', async () => {
      const agent = credoHolder({
        trustedCertificates: mode === 'x5c' ? [r.caPem] : undefined,
        fetch: walletFetch,
        allowInsecureHttpUrls: mode === 'x5c',
      });
      try {
        for (const txCode of [false, true]) {
          const o = await offer({ txCode });
          const holder = agent.modules.openid4vc.holder;
          const resolved = await holder.resolveCredentialOffer(o.offerUri);
          expect(Object.keys(resolved.offeredCredentialConfigurations)).toEqual(['membership-v1']);
          const token = await holder.requestToken({ resolvedCredentialOffer: resolved, txCode: o.txCode });
          // Our authorization server offers DPoP, so Credo binds the token to a key of its own.
          expect(token.dpop).toBeDefined();
          expect(token.accessTokenResponse.token_type).toBe('DPoP');
          const binding = newKeyBinding();
          const { credentials } = await holder.requestCredentials({
            resolvedCredentialOffer: resolved,
            ...token,
            credentialBindingResolver: binding.resolver,
          });
          expect(credentials).toHaveLength(1);
          const record = credentials[0]!.record as { credentialInstances: Array<{ compactSdJwtVc: string }> };
          const compact = record.credentialInstances[0]!.compactSdJwtVc;
          const payload = await verified(compact);
          const { kid: _kid, ...boundJwk } = binding.keys.at(-1)!.toJson() as Record<string, unknown>;
          expect(payload.cnf.jwk).toEqual(boundJwk);
          if (txCode) await expectRevocable(payload);
        }
        // With nonces required, Credo's proofs carried ones the server gave (RFC 9449 §8).
        if (mode === 'x5c')
          expect(
            Number(
              (
                await queryStore<{ n: number | string }>(
                  r.issuer.ctx.store,
                  'SELECT COUNT(*) AS n FROM oid4vci_dpop_nonces',
                )
              )[0]!.n,
            ),
          ).toBeGreaterThan(0);
      } finally {
        await agent.shutdown().catch(() => undefined);
      }
    });
  }

  if (mode === 'x5c') {
    it('Credo holder: a batch of ten (batch_size from the metadata), each verified, distinct random indexes, revoked together', async () => {
      const agent = credoHolder({
        trustedCertificates: [r.caPem],
        fetch: walletFetch,
        allowInsecureHttpUrls: true,
      });
      try {
        const holder = agent.modules.openid4vc.holder;
        const resolved = await holder.resolveCredentialOffer((await offer()).offerUri);
        const token = await holder.requestToken({ resolvedCredentialOffer: resolved });
        const bound: Kms.PublicJwk[] = [];
        const { credentials } = await holder.requestCredentials({
          resolvedCredentialOffer: resolved,
          ...token,
          credentialBindingResolver: async ({ agentContext, issuerMaxBatchSize }) => {
            expect(issuerMaxBatchSize).toBe(10);
            const kms = agentContext.resolve(Kms.KeyManagementApi);
            for (let i = 0; i < issuerMaxBatchSize; i++)
              bound.push(
                Kms.PublicJwk.fromPublicJwk(
                  (await kms.createKey({ type: { kty: 'EC', crv: 'P-256' } })).publicJwk,
                ),
              );
            return { method: 'jwk', keys: bound };
          },
        });
        const record = credentials[0]!.record as { credentialInstances: Array<{ compactSdJwtVc: string }> };
        expect(record.credentialInstances).toHaveLength(10);
        const payloads: Array<Record<string, any>> = [];
        for (const { compactSdJwtVc } of record.credentialInstances)
          payloads.push(await verified(compactSdJwtVc));
        const boundKeys = bound.map((k) => {
          const { kid: _kid, ...jwk } = k.toJson() as Record<string, unknown>;
          return jwk;
        });
        for (const p of payloads) expect(boundKeys).toContainEqual(p.cnf.jwk);
        const indexes = payloads.map((p) => p.status.status_list.idx as number).sort((a, b) => a - b);
        expect(new Set(indexes).size).toBe(10);
        expect(indexes.at(-1)! - indexes[0]!).toBeGreaterThan(9);
        // One call revokes the batch (its id is the same on each of the ten records).
        const ids = await queryStore<{ batch_id: string }>(
          r.issuer.ctx.store,
          'SELECT DISTINCT batch_id FROM issuances WHERE holder_did IN (' +
            payloads.map(() => '?').join(',') +
            ')',
          payloads.map((p) => p.sub),
        );
        expect(ids).toHaveLength(1);
        const started = await r.issuer.admin('/admin/status-changes', {
          change: 'revoke',
          selector: { batchId: ids[0]!.batch_id },
          reason: 'wallet lost',
          expectedCount: 10,
        });
        expect(started.status).toBe(202);
        const { jobId } = (await started.json()) as { jobId: string };
        await expect
          .poll(
            async () =>
              ((await (await r.issuer.admin(`/admin/status-changes/${jobId}`)).json()) as any).state,
          )
          .toBe('done');
        for (const p of payloads) {
          const list = await (await walletFetch(p.status.status_list.uri)).text();
          expect(getListFromStatusListJWT(list).getStatus(p.status.status_list.idx)).toBe(1);
        }
      } finally {
        await agent.shutdown().catch(() => undefined);
      }
    });
  }
});
