import type { Oid4vciProfile } from '../config/oid4vci-config.js';
import type { IssuerCatalog, IssuerIdentity, SigningIdentity } from '../identity/issuer-identity.js';
import type { EmailHasher } from '../issuance/email-hash.js';
import type { IssuanceCore } from '../issuance/issuance-core.js';
import type { Oid4vciStore } from '../store/store.js';
import type { ClientAttestationVerifier } from './client-attestation.js';
import type { DpopNonceMode, DpopVerifier } from './dpop.js';
import type { KeyAttestationVerifier } from './key-attestation.js';
import type { ProtocolLibraries } from './library.js';
import type { ChannelMetadata } from './metadata.js';
import type { X5cTrust } from './x5c-trust.js';

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
  now?: () => Date;
}

/** What every step of the channel works with, built once by `Oid4vciChannel`. */
export interface ChannelParts extends ProtocolLibraries {
  deps: Oid4vciChannelDeps;
  now: () => Date;
  metadata: ChannelMetadata;
  dpop: DpopVerifier;
  clientAttestation: ClientAttestationVerifier;
  keyAttestation: KeyAttestationVerifier;
}

/** A wallet endpoint's answer: its JSON body and the headers it carries (RFC 9449 §8: `DPoP-Nonce`). */
export interface ProtocolAnswer {
  body: Record<string, unknown>;
  headers: Record<string, string>;
}
