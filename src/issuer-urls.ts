/**
 * The public face of an issuer that the lower floors (the config, the schema loader) need: its
 * identification mode and every public URL under its origin. Imports nothing of ours.
 */

/** How verifiers find the credential-signing key (docs/security.md "Issuer identification (SD_JWT_ISSUER)"). */
export type SdJwtIssuerMode = 'url' | 'did:web' | 'x5c';

/** did:web method §3.2: the host, with a port's ':' percent-encoded. */
export function didWebFromOrigin(origin: string): string {
  const url = new URL(origin);
  return `did:web:${url.host.replace(':', '%3A')}`;
}

/**
 * Every public URL of one issuer (docs/interface.md), built here and nowhere else. The origin is
 * kept without a trailing slash (the config refuses one; a test may pass one).
 */
export class IssuerUrls {
  readonly origin: string;

  constructor(origin: string) {
    this.origin = origin.replace(/\/+$/, '');
  }

  /** The origin's did:web (did:web method §3.2), whose document is `/.well-known/did.json`. */
  get did(): string {
    return didWebFromOrigin(this.origin);
  }

  /** `/.well-known/<service>-partner-info` (the did.json service endpoint). */
  partnerInfo(service: string): string {
    return `${this.origin}/.well-known/${service}-partner-info`;
  }

  /** A partition's token status list (draft-ietf-oauth-status-list `status_list.uri`). */
  statusList(partition: number): string {
    return `${this.origin}/statuslist/${partition}`;
  }

  /**
   * The `vct` of a schema whose file names none: a URL under the origin, so that the issuer serves
   * its type metadata there (src/formats/sd-jwt-vc/type-metadata.ts) and the type name is collision-resistant,
   * as the SD-JWT VC draft recommends for `vct` ("Type Metadata": a URL `vct` is where the metadata
   * can be retrieved). A schemaId outside `[A-Za-z0-9._~-]` is percent-encoded and then gets no
   * served metadata (only plain paths are served).
   */
  vct(schemaId: string): string {
    return `${this.origin}/vct/${encodeURIComponent(schemaId)}`;
  }

  /** An Iden3 credential's `credentialStatus.id` (`GET /credential-status/:nonce`). */
  credentialStatus(nonce: number | bigint | string): string {
    return `${this.origin}/credential-status/${nonce}`;
  }

  /** OpenID4VCI 1.0 §6 token endpoint. */
  get oid4vciToken(): string {
    return `${this.origin}/oid4vci/token`;
  }

  /** OpenID4VCI 1.0 §7 nonce endpoint. */
  get oid4vciNonce(): string {
    return `${this.origin}/oid4vci/nonce`;
  }

  /** OpenID4VCI 1.0 §8 credential endpoint. */
  get oid4vciCredential(): string {
    return `${this.origin}/oid4vci/credential`;
  }

  /** OpenID4VCI 1.0 §9 deferred credential endpoint. */
  get oid4vciDeferredCredential(): string {
    return `${this.origin}/oid4vci/deferred-credential`;
  }

  /** OpenID4VCI 1.0 §11 notification endpoint. */
  get oid4vciNotification(): string {
    return `${this.origin}/oid4vci/notification`;
  }

  /** OpenID4VCI 1.0 §4.1.3: an offer by reference (`credential_offer_uri`). */
  oid4vciOffer(offerId: string): string {
    return `${this.origin}/oid4vci/offers/${offerId}`;
  }

  /** RFC 9126 pushed authorization request endpoint (the authorization code flow). */
  get oid4vciPar(): string {
    return `${this.origin}/oid4vci/par`;
  }

  /** RFC 6749 §3.1 authorization endpoint (the authorization code flow). */
  get oid4vciAuthorize(): string {
    return `${this.origin}/oid4vci/authorize`;
  }

  /** Where the login provider sends the holder back (the issuer's redirect_uri as its relying party). */
  get oid4vciLoginCallback(): string {
    return `${this.origin}/oid4vci/login/callback`;
  }

  /** The URL a request for `path` addressed, as the issuer publishes it (a DPoP proof's `htu`). */
  at(path: string): string {
    return `${this.origin}${path}`;
  }
}
