import type { AuthorizationServerMetadata, RequestLike } from '@openid4vc/oauth2';
import type { IssuerMetadataResult } from '@openid4vc/openid4vci';
import { loginCallback } from './authorization-response.js';
import { authorize } from './authorize.js';
import { ClientAttestationVerifier } from './client-attestation.js';
import { authorizeAccess, credential } from './credential.js';
import { deferredCredential, type SuppliedClaims, supplyDeferredClaims } from './deferred.js';
import { DpopVerifier } from './dpop.js';
import { KeyAttestationVerifier } from './key-attestation.js';
import { protocolLibraries, SIGNING_ALGS } from './library.js';
import { ChannelMetadata } from './metadata.js';
import { nonce } from './nonce.js';
import { notification } from './notification.js';
import { type CreatedOffer, createOffer, type OfferRequest, offerObject } from './offers.js';
import { pushAuthorization } from './par.js';
import type { AuthorizationCodeDeps, ChannelParts, Oid4vciChannelDeps, ProtocolAnswer } from './parts.js';
import { SignedMetadata } from './signed-metadata.js';
import { token } from './token.js';

/**
 * The OpenID4VCI channel (OpenID for Verifiable Credential Issuance 1.0: the pre-authorized code
 * flow, and with a login provider the authorization code flow (par.ts, authorize.ts, login.ts,
 * authorization-response.ts, code-token.ts);
 * docs/interface.md "OpenID4VCI: the wallet door"): an admin's credential offer, the token
 * endpoint that exchanges its pre-authorized code, the nonce endpoint and the credential endpoint,
 * one file per step beside this one. The protocol messages are parsed and checked by
 * `@openid4vc/openid4vci` and `@openid4vc/oauth2` (library.ts); what is ours is the state (offers,
 * codes, tokens and nonces in the database, so any instance answers any step) and the issuance,
 * which is the core's like every other channel's.
 */
export class Oid4vciChannel {
  private readonly parts: ChannelParts;
  private readonly signed: SignedMetadata | undefined;

  constructor(deps: Oid4vciChannelDeps) {
    const now = deps.now ?? (() => new Date());
    const libraries = protocolLibraries(deps.identity.urls.origin);
    const clientAttestation = new ClientAttestationVerifier({
      issuer: deps.identity.urls.origin,
      trust: deps.walletTrust,
      required: deps.profile === 'haip',
      store: deps.store,
      now,
    });
    this.signed = deps.metadataSigner ? new SignedMetadata(deps.metadataSigner) : undefined;
    const keyAttestation = new KeyAttestationVerifier(deps.keyAttestationTrust, deps.profile ?? 'basic', now);
    const parts: ChannelParts = {
      ...libraries,
      deps,
      now,
      metadata: new ChannelMetadata({
        identity: deps.identity,
        core: deps.core,
        libraries,
        profile: deps.profile ?? 'basic',
        clientAttestation: clientAttestation.accepted,
        keyAttestation,
        batchSize: deps.batchSize,
        authorizationCode: deps.authorizationCode,
        encryptionRequired: deps.encryptionRequired,
        requestDecryption: deps.requestDecryption,
        notifications: deps.notifications ?? true,
      }),
      dpop: new DpopVerifier({
        authorizationServer: libraries.authorizationServer,
        store: deps.store,
        nonce: deps.dpopNonce ?? 'off',
        signingAlgs: SIGNING_ALGS,
        now,
      }),
      clientAttestation,
      keyAttestation,
      authorize: (request, states) => authorizeAccess(parts, request, states),
    };
    this.parts = parts;
  }

  /** RFC 8414 authorization server metadata (metadata.ts). */
  authorizationServerMetadata(): AuthorizationServerMetadata {
    return this.parts.metadata.authorizationServer();
  }

  /** OpenID4VCI 1.0 §12.2 credential issuer metadata (metadata.ts). */
  issuerMetadata(): IssuerMetadataResult {
    return this.parts.metadata.issuer();
  }

  /**
   * OpenID4VCI 1.0 §12.2.3 signed metadata (signed-metadata.ts), when the issuer identifies itself
   * by certificate (SD_JWT_ISSUER=x5c); undefined otherwise.
   */
  get signsMetadata(): boolean {
    return this.signed !== undefined;
  }

  async signedIssuerMetadata(): Promise<string | undefined> {
    return this.signed?.jwt(this.issuerMetadata().credentialIssuer, this.parts.now());
  }

  /** An admin's credential offer (offers.ts). */
  createOffer(req: OfferRequest): Promise<CreatedOffer> {
    return createOffer(this.parts, req);
  }

  /** The offer served by reference (offers.ts). */
  offerObject(offerId: string): Promise<Record<string, unknown>> {
    return offerObject(this.parts, offerId);
  }

  /** Token endpoint (token.ts). */
  token(request: RequestLike, body: Record<string, unknown>): Promise<ProtocolAnswer> {
    return token(this.parts, request, body);
  }

  /** The authorization code flow's parts; undefined without a login provider (OID4VCI_LOGIN_ISSUER). */
  get authorizationCode(): AuthorizationCodeDeps | undefined {
    return this.parts.deps.authorizationCode;
  }

  /** Pushed authorization request endpoint (par.ts). */
  pushAuthorization(request: RequestLike, body: Record<string, unknown>): Promise<ProtocolAnswer> {
    return pushAuthorization(this.parts, this.flow(), request, body);
  }

  /** Authorization endpoint (authorize.ts): where to send the holder's browser. */
  authorize(request: RequestLike, query: Record<string, unknown>): Promise<string> {
    return authorize(this.parts, this.flow(), request, query);
  }

  /** The login provider's redirect back (authorization-response.ts): where to send the browser. */
  loginCallback(query: Record<string, unknown>): Promise<string> {
    return loginCallback(this.parts, this.flow(), query);
  }

  private flow(): AuthorizationCodeDeps {
    const flow = this.parts.deps.authorizationCode;
    if (!flow) throw new Error('the authorization code flow is not configured (OID4VCI_LOGIN_ISSUER)');
    return flow;
  }

  /** Nonce endpoint (nonce.ts). */
  nonce(): Promise<Record<string, unknown>> {
    return nonce(this.parts);
  }

  /** Credential endpoint (credential.ts); `encrypted`: the request sent as a JWE (request-encryption.ts). */
  credential(
    request: RequestLike,
    body: Record<string, unknown>,
    encrypted?: string,
  ): Promise<ProtocolAnswer> {
    return credential(this.parts, request, body, encrypted);
  }

  /** Deferred credential endpoint (deferred.ts). */
  deferredCredential(
    request: RequestLike,
    body: Record<string, unknown>,
    encrypted?: string,
  ): Promise<ProtocolAnswer> {
    return deferredCredential(this.parts, request, body, encrypted);
  }

  /** An admin's claims for a deferred credential (deferred.ts). */
  supplyDeferredClaims(req: SuppliedClaims): Promise<{ credentialId: string; transactionExpiresAt: Date }> {
    return supplyDeferredClaims(this.parts, req);
  }

  /** Notification endpoint (notification.ts); absent with OID4VCI_NOTIFICATIONS=off. */
  notification(request: RequestLike, body: Record<string, unknown>): Promise<ProtocolAnswer> {
    return notification(this.parts, request, body);
  }

  /** Whether the notification endpoint is served (OID4VCI_NOTIFICATIONS). */
  get notifications(): boolean {
    return this.parts.deps.notifications ?? true;
  }
}
