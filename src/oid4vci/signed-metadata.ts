import type { Jwk } from '@openid4vc/oauth2';
import type { CredentialIssuerMetadata } from '@openid4vc/openid4vci';
import { Openid4vciIssuer } from '@openid4vc/openid4vci';
import type { SigningIdentity } from '../identity/issuer-identity.js';
import { protocolCallbacks } from './library.js';

/**
 * Signed credential issuer metadata (OpenID4VCI 1.0 §12.2.3), served when the issuer identifies
 * itself by certificate (SD_JWT_ISSUER=x5c) and the wallet asks with `Accept: application/jwt`:
 * the metadata's parameters as the claims of a JWT (`typ: openidvci-issuer-metadata+jwt`; `sub`
 * and `iss` the credential issuer identifier, `iat`, `exp`), signed by the credential-signing key
 * with its certificate chain in `x5c` (HAIP: key resolution by `x5c`), the chain
 * the credentials carry. The JWT is made by `@openid4vc/openid4vci`; a signature is reused for
 * RESIGN_SECONDS while the metadata and the key stay the same.
 */

/** How long a signed metadata JWT is valid (its `exp`). */
export const SIGNED_METADATA_SECONDS = 86_400;
/** How long one signature is served before the next request signs again. */
const RESIGN_SECONDS = 3600;

export class SignedMetadata {
  private last: { metadata: object; kid: string; jwt: string; signedAt: number } | undefined;

  constructor(private readonly identity: SigningIdentity) {}

  async jwt(metadata: CredentialIssuerMetadata, now: Date): Promise<string> {
    const key = this.identity.keys.current().signing;
    const last = this.last;
    if (
      last?.metadata === metadata &&
      last.kid === key.kid &&
      now.getTime() - last.signedAt < RESIGN_SECONDS * 1000
    )
      return last.jwt;
    const header = this.identity.identification.header(key);
    if (!header.x5c) throw new Error('signed metadata needs the signing key’s x5c chain (SD_JWT_ISSUER=x5c)');
    const issuer = new Openid4vciIssuer({
      callbacks: {
        ...protocolCallbacks,
        signJwt: async (_signer, { header: h, payload }) => {
          const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
          const input = `${b64(h)}.${b64(payload)}`;
          const signature = await key.sign(Buffer.from(input));
          return { jwt: `${input}.${signature.toString('base64url')}`, signerJwk: key.publicJwk as Jwk };
        },
      },
    });
    const jwt = await issuer.createSignedCredentialIssuerMetadataJwt({
      credentialIssuerMetadata: metadata,
      signer: { method: 'x5c', alg: 'ES256', x5c: header.x5c, kid: header.kid },
      issuer: metadata.credential_issuer,
      issuedAt: now,
      expiresAt: new Date(now.getTime() + SIGNED_METADATA_SECONDS * 1000),
    });
    this.last = { metadata, kid: key.kid, jwt, signedAt: now.getTime() };
    return jwt;
  }
}
