import type { RequestDpopOptions } from '@openid4vc/oauth2';
import type { CredentialOfferObject, IssuerMetadataResult, Openid4vciClient } from '@openid4vc/openid4vci';
import { type HolderKey, holderKey, openid4vciWallet } from './oid4vci-wallet.js';

/**
 * The authorization code flow as a wallet runs it with the `@openid4vc/openid4vci` client (it
 * pushes the request, makes the PKCE pair and the DPoP proofs, checks `iss` in the response):
 * `signIn` is the holder's part in the browser, from the issuer's authorization URL to the wallet's
 * redirect_uri.
 */
export const WALLET_REDIRECT = 'https://wallet.example/callback';

export interface AuthCodeRun {
  credential: string;
  holder: HolderKey;
  dpop: HolderKey;
  accessTokenResponse: Record<string, unknown>;
  /** The wallet's DPoP state after the token request (its key and the server's nonce). */
  tokenDpop: RequestDpopOptions;
  wallet: Openid4vciClient;
  issuerMetadata: IssuerMetadataResult;
}

/** Follows the issuer's 303 from its authorization endpoint: where the holder signs in. */
export async function followIssuerRedirect(url: string): Promise<string> {
  const res = await fetch(url, { redirect: 'manual' });
  const location = res.headers.get('location');
  if (res.status !== 303 || !location) throw new Error(`${res.status}: ${await res.text()}`);
  return location;
}

export async function receiveByAuthorizationCode(options: {
  issuerUrl: string;
  /** The offer's URI; none: the wallet starts from the issuer's metadata on its own. */
  offerUri?: string;
  configurationId?: string;
  clientId?: string;
  /** Asks with authorization_details instead of scope. */
  details?: boolean;
  /** A wallet attestation and the key it attests: sent at PAR and token (`clientId` its `sub`). */
  clientAttestation?: { jwt: string; key: HolderKey };
  signIn: (issuerAuthorizationUrl: string) => Promise<string>;
}): Promise<AuthCodeRun> {
  const holder = holderKey();
  const dpop = holderKey();
  const attestation = options.clientAttestation;
  const wallet = openid4vciWallet(
    attestation ? [holder, dpop, attestation.key] : [holder, dpop],
    undefined,
    attestation?.jwt,
  );
  const issuerMetadata = await wallet.resolveIssuerMetadata(options.issuerUrl);
  const credentialOffer: CredentialOfferObject = options.offerUri
    ? await wallet.resolveCredentialOffer(options.offerUri)
    : {
        credential_issuer: options.issuerUrl,
        credential_configuration_ids: [options.configurationId ?? 'membership-v1'],
        grants: { authorization_code: {} },
      };
  const configurationId = credentialOffer.credential_configuration_ids[0]!;
  const scope = issuerMetadata.credentialIssuer.credential_configurations_supported[configurationId]?.scope;
  const {
    authorizationRequestUrl,
    pkce,
    dpop: dpopAfterPar,
  } = await wallet.createAuthorizationRequestUrlFromOffer({
    clientId: options.clientId ?? 'wallet-1',
    redirectUri: WALLET_REDIRECT,
    credentialOffer,
    issuerMetadata,
    ...(options.details
      ? {
          additionalRequestPayload: {
            authorization_details: JSON.stringify([
              { type: 'openid_credential', credential_configuration_id: configurationId },
            ]),
          },
        }
      : { scope: scope as string }),
    dpop: { signer: dpop.signer },
  });
  const back = await options.signIn(authorizationRequestUrl);
  const response = wallet.parseAndVerifyAuthorizationResponseRedirectUrl({
    url: back,
    authorizationServerMetadata: issuerMetadata.authorizationServers[0]!,
  });
  if (response.error !== undefined) throw new Error(`authorization refused: ${JSON.stringify(response)}`);
  if (!back.startsWith(WALLET_REDIRECT)) throw new Error(`the holder was sent back to ${back}`);
  const { accessTokenResponse, dpop: tokenDpop } = await wallet.retrieveAuthorizationCodeAccessTokenFromOffer(
    {
      issuerMetadata,
      credentialOffer,
      authorizationCode: response.code,
      pkceCodeVerifier: pkce!.codeVerifier,
      redirectUri: WALLET_REDIRECT,
      dpop: dpopAfterPar ?? { signer: dpop.signer },
    },
  );
  const { c_nonce } = await wallet.requestNonce({ issuerMetadata });
  const { jwt } = await wallet.createCredentialRequestJwtProof({
    issuerMetadata,
    signer: holder.signer,
    nonce: c_nonce,
    credentialConfigurationId: configurationId,
  });
  const { credentialResponse } = await wallet.retrieveCredentials({
    issuerMetadata,
    accessToken: accessTokenResponse.access_token,
    credentialConfigurationId: configurationId,
    proofs: { jwt: [jwt] },
    dpop: tokenDpop!,
  });
  const first = credentialResponse.credentials?.[0] as { credential?: unknown } | undefined;
  if (typeof first?.credential !== 'string')
    throw new Error(`no credential in ${JSON.stringify(credentialResponse)}`);
  return {
    credential: first.credential,
    holder,
    dpop,
    accessTokenResponse,
    tokenDpop: tokenDpop!,
    wallet,
    issuerMetadata,
  };
}
