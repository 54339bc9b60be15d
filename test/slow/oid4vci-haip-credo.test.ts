import { Kms } from '@credo-ts/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Attester, attester, walletAttestation } from '../helpers/attesters.js';
import { credoHolder, newKeyBinding } from '../helpers/credo.js';
import { issuerKeyOf, meecoVerify, type Running, start, stop } from '../helpers/issuer-modes.js';

/**
 * Credo's holder (`@credo-ts/openid4vc` 0.6.3) against an OID4VCI_PROFILE=haip issuer (docs/haip.md):
 * a wallet attestation from a test wallet provider's CA for a key in Credo's own key store (Credo
 * makes the PoP), DPoP with the server's nonces, the issuer found by its x5c chain; the credential
 * Credo verified itself is checked again by Meeco's verifier.
 */
describe('OID4VCI_PROFILE=haip with Credo’s holder', () => {
  let r: Running;
  let provider: Attester;
  beforeAll(async () => {
    provider = await attester('wallet-provider');
    r = await start('x5c', {
      OID4VCI: 'on',
      OID4VCI_PROFILE: 'haip',
      OID4VCI_WALLET_TRUST: provider.trustFile,
    });
  }, 300_000);
  afterAll(async () => {
    if (r) await stop(r);
  });

  it('attested, DPoP-bound with nonces: the credential arrives, verified by Credo and Meeco', async () => {
    const agent = credoHolder({ trustedCertificates: [r.caPem], allowInsecureHttpUrls: true });
    try {
      const res = await r.issuer.admin('/admin/credential-offers', {
        schemaId: 'membership-v1',
        userId: 'demo-user-1',
      });
      expect(res.status).toBe(201);
      const { offerUri } = (await res.json()) as { offerUri: string };
      const holder = agent.modules.openid4vc.holder;
      const resolved = await holder.resolveCredentialOffer(offerUri);
      // Without the attestation the haip token endpoint refuses Credo.
      await expect(holder.requestToken({ resolvedCredentialOffer: resolved })).rejects.toThrow(
        /invalid_client/,
      );
      const kms = agent.context.resolve(Kms.KeyManagementApi);
      const walletKey = await kms.createKey({ type: { kty: 'EC', crv: 'P-256' } });
      const walletAttestationJwt = walletAttestation(provider, {
        sub: 'credo-wallet',
        cnf: walletKey.publicJwk as never,
      });
      const token = await holder.requestToken({ resolvedCredentialOffer: resolved, walletAttestationJwt });
      expect(token.accessTokenResponse.token_type).toBe('DPoP');
      const { credentials } = await holder.requestCredentials({
        resolvedCredentialOffer: resolved,
        ...token,
        credentialBindingResolver: newKeyBinding().resolver,
      });
      expect(credentials).toHaveLength(1);
      const record = credentials[0]!.record as { credentialInstances: Array<{ compactSdJwtVc: string }> };
      const compact = record.credentialInstances[0]!.compactSdJwtVc;
      const payload = (await meecoVerify(compact, (h) => issuerKeyOf(r, 'x5c', h))) as Record<
        string,
        unknown
      >;
      expect(payload).toMatchObject({ givenName: 'Alice', tier: 'gold' });
    } finally {
      await agent.shutdown().catch(() => undefined);
    }
  });
});
