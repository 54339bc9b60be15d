import type { RequestLike } from '@openid4vc/oauth2';
import type { Oid4vciProfile } from '../config/oid4vci-config.js';
import type { IssuerCatalog, IssuerIdentity, SigningIdentity } from '../identity/issuer-identity.js';
import type { EmailHasher } from '../issuance/email-hash.js';
import type { IssuanceCore } from '../issuance/issuance-core.js';
import type { Logger } from '../model.js';
import type { Oid4vciAuthorizationStore, Oid4vciOffer, Oid4vciStore } from '../store/store.js';
import type { ClientAttestationVerifier } from './client-attestation.js';
import type { DpopNonceMode, DpopVerifier } from './dpop.js';
import type { KeyAttestationVerifier } from './key-attestation.js';
import type { ProtocolLibraries } from './library.js';
import type { UpstreamLogin } from './login.js';
import type { ChannelMetadata } from './metadata.js';
import type { RequestDecryption } from './request-encryption.js';
import type { X5cTrust } from './x5c-trust.js';

export type { ProtocolAnswer } from './answer.js';

/** How long an access token of the channel lives (every grant's). */
export const ACCESS_TOKEN_SECONDS = 300;

/** What the OpenID4VCI channel is built from (src/context.ts). */
export interface Oid4vciChannelDeps {
  /**
   * The issuer the channel speaks for: its origin is the credential issuer identifier, its URLs
   * the endpoints, its catalogue's schemas the ones offered (read at each request).
   */
  identity: Pick<IssuerIdentity, 'urls'> & { readonly catalog: Pick<IssuerCatalog, 'schemas'> };
  core: IssuanceCore;
  store: Oid4vciStore;
  hashEmail: EmailHasher;
  requireDpop: boolean;
  /** OID4VCI_DPOP_NONCE (RFC 9449 §8); `off` when not given. */
  dpopNonce?: DpopNonceMode;
  /** OID4VCI_PROFILE; `basic` when not given. */
  profile?: Oid4vciProfile;
  /** OID4VCI_WALLET_TRUST: the wallet providers trusted for wallet attestations. */
  walletTrust?: X5cTrust;
  /** OID4VCI_KEY_ATTESTATION_TRUST: the key attesters trusted for key attestations. */
  keyAttestationTrust?: X5cTrust;
  /** OID4VCI_BATCH_SIZE: the most proofs (credentials) one credential request may carry; 1 when not given. */
  batchSize?: number;
  /** SD_JWT_ISSUER=x5c: the identity whose key and chain sign the metadata (signed-metadata.ts). */
  metadataSigner?: SigningIdentity;
  /**
   * The authorization code flow (OID4VCI_LOGIN_ISSUER set): the login provider that signs the
   * holder in, whether an authorization request must be pushed first (OID4VCI_PROFILE=haip), and
   * whether refresh tokens are given (OID4VCI_REFRESH_TOKENS=1). Absent: pre-authorized code only.
   */
  authorizationCode?: AuthorizationCodeDeps;
  log?: Logger;
  /** OID4VCI_RESPONSE_ENCRYPTION=required: every credential request must ask for an encrypted response. */
  encryptionRequired?: boolean;
  /** OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: the key credential requests may be encrypted to (§10). */
  requestDecryption?: RequestDecryption | undefined;
  /** OID4VCI_NOTIFICATIONS (OpenID4VCI 1.0 §11); on when not given. */
  notifications?: boolean;
  /** OID4VCI_DEFERRED_SECONDS: how long a deferred transaction waits (OpenID4VCI 1.0 §9). */
  deferredSeconds?: number;
  now?: () => Date;
}

export interface AuthorizationCodeDeps {
  login: UpstreamLogin;
  store: Oid4vciAuthorizationStore;
  requirePar: boolean;
  refreshTokens: boolean;
}

/** What every step of the channel works with, built once by `Oid4vciChannel`. */
export interface ChannelParts extends ProtocolLibraries {
  deps: Oid4vciChannelDeps;
  now: () => Date;
  metadata: ChannelMetadata;
  dpop: DpopVerifier;
  clientAttestation: ClientAttestationVerifier;
  keyAttestation: KeyAttestationVerifier;
  /**
   * The offer a request's access token (and DPoP proof) was given for, in one of `states`
   * (credential.ts `authorize`; the deferred and notification endpoints call it through here).
   */
  authorize(request: RequestLike, states: ReadonlyArray<Oid4vciOffer['state']>): Promise<Oid4vciOffer>;
}
