import { Kms } from '@credo-ts/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Attester, attester, walletAttestation } from '../helpers/attesters.js';
import { credoHolder, newKeyBinding } from '../helpers/credo.js';
import { issuerKeyOf, meecoVerify, type Running, start, stop } from '../helpers/issuer-modes.js';
import { type LoginProvider, startLoginProvider } from '../helpers/login-provider.js';
import { followIssuerRedirect, WALLET_REDIRECT } from '../helpers/oid4vci-auth-code-wallet.js';

/**
 * Credo's holder (`@credo-ts/openid4vc` 0.6.3) against an OID4VCI_PROFILE=haip issuer (docs/haip.md):
 * a wallet attestation from a test wallet provider's CA for a key in Credo's own key store (Credo
 * makes the PoP), DPoP with the server's nonces, the issuer found by its x5c chain; the credential
 * Credo verified itself is checked again by Meeco's verifier. Both grants: the pre-authorized code,
 * and the authorization code with a pushed request and the holder signed in at a real OpenID
 * Connect provider (`oidc-provider`).
 */
describe('OID4VCI_PROFILE=haip with Credo’s holder', () => {
  let r: Running;
  let provider: Attester;
  let login: LoginProvider;
  beforeAll(async () => {
    provider = await attester('wallet-provider');
    r = await start(
      'x5c',
      { OID4VCI: 'on', OID4VCI_PROFILE: 'haip', OID4VCI_WALLET_TRUST: provider.trustFile },
      async (origin) => {
        login = await startLoginProvider({ redirectUri: `${origin}/oid4vci/login/callback` });
        return {
          OID4VCI_LOGIN_ISSUER: login.issuer,
          OID4VCI_LOGIN_CLIENT_ID: login.clientId,
          OID4VCI_LOGIN_CLIENT_SECRET: login.clientSecret,
        };
      },
    );
  }, 300_000);
  afterAll(async () => {
    if (r) await stop(r);
    await login?.close();
  });

  /** Credo's own key for a wallet attestation of `sub`, and the attestation. */
  async function attested(agent: ReturnType<typeof credoHolder>, sub: string): Promise<string> {
    const kms = agent.context.resolve(Kms.KeyManagementApi);
    const walletKey = await kms.createKey({ type: { kty: 'EC', crv: 'P-256' } });
    return walletAttestation(provider, { sub, cnf: walletKey.publicJwk as never });
  }

  it('the authorization code flow: attested PAR, sign-in at the provider, DPoP; the signed-in user’s credential', async () => {
    const agent = credoHolder({ trustedCertificates: [r.caPem], allowInsecureHttpUrls: true });
    try {
      const res = await r.issuer.admin('/admin/credential-offers', {
        schemaId: 'membership-v1',
        userId: 'demo-user-2',
        grant: 'authorization_code',
      });
      expect(res.status).toBe(201);
      const { offerUri } = (await res.json()) as { offerUri: string };
      const holder = agent.modules.openid4vc.holder;
      const resolved = await holder.resolveCredentialOffer(offerUri);
      const flow = { clientId: 'credo-wallet', redirectUri: WALLET_REDIRECT };
      // Without the attestation the haip PAR endpoint refuses Credo.
      await expect(holder.resolveOpenId4VciAuthorizationRequest(resolved, flow)).rejects.toThrow(
        /invalid_client/,
      );
      const walletAttestationJwt = await attested(agent, 'credo-wallet');
      const authorization = await holder.resolveOpenId4VciAuthorizationRequest(resolved, {
        ...flow,
        walletAttestationJwt,
      });
      if (!('authorizationRequestUrl' in authorization))
        throw new Error(`Credo chose the ${authorization.authorizationFlow} flow`);
      // The holder's browser: to the provider through the issuer, signed in, back to the wallet.
      const atProvider = await followIssuerRedirect(authorization.authorizationRequestUrl);
      const back = await followIssuerRedirect(await login.signIn(atProvider, 'demo-user-2'));
      const { authorizationCode } = holder.parseAuthorizationCodeFromAuthorizationResponse({
        authorizationResponseRedirectUrl: back,
        resolvedCredentialOffer: resolved,
      });
      const token = await holder.requestToken({
        resolvedCredentialOffer: resolved,
        code: authorizationCode,
        ...flow,
        ...(authorization.codeVerifier ? { codeVerifier: authorization.codeVerifier } : {}),
        ...(authorization.dpop ? { dpop: authorization.dpop } : {}),
        walletAttestationJwt,
      });
      expect(token.accessTokenResponse.token_type).toBe('DPoP');
      const { credentials } = await holder.requestCredentials({
        resolvedCredentialOffer: resolved,
        ...token,
        credentialBindingResolver: newKeyBinding().resolver,
      });
      expect(credentials).toHaveLength(1);
      const record = credentials[0]!.record as { credentialInstances: Array<{ compactSdJwtVc: string }> };
      const payload = (await meecoVerify(record.credentialInstances[0]!.compactSdJwtVc, (h) =>
        issuerKeyOf(r, 'x5c', h),
      )) as Record<string, unknown>;
      expect(payload).toMatchObject({ givenName: 'Bram' });
    } finally {
      await agent.shutdown().catch(() => undefined);
    }
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
      const walletAttestationJwt = await attested(agent, 'credo-wallet');
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
