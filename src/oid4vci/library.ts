import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import {
  type CallbackContext,
  clientAuthenticationAnonymous,
  HashAlgorithm,
  Oauth2AuthorizationServer,
  Oauth2Error,
} from '@openid4vc/oauth2';
import { Openid4vciIssuer, setGlobalConfig } from '@openid4vc/openid4vci';

/**
 * The protocol libraries as the OpenID4VCI channel uses them. The protocol messages are parsed
 * and checked by `@openid4vc/openid4vci` and `@openid4vc/oauth2`, given ES256 verification and
 * SHA-256 over `node:crypto` as callbacks.
 */

/** The one JWS algorithm of proofs, DPoP proofs and credentials. */
export const SIGNING_ALGS = ['ES256'];

export const sha256 = (value: string): string => createHash('sha256').update(value).digest('base64url');
export const random = (bytes: number): string => randomBytes(bytes).toString('base64url');

/**
 * The JWT checks the libraries call back into: ES256 over a public JWK only (our metadata's
 * `proof_signing_alg_values_supported` and `dpop_signing_alg_values_supported`).
 */
export const verifyJwkJwt: CallbackContext['verifyJwt'] = async (signer, jwt) => {
  if (signer.method !== 'jwk' || signer.alg !== 'ES256') return { verified: false };
  const jwk = signer.publicJwk;
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || 'd' in jwk) return { verified: false };
  const [header, payload, signature] = jwt.compact.split('.');
  try {
    const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }, format: 'jwk' });
    const ok = verify(
      'sha256',
      Buffer.from(`${header}.${payload}`),
      { key, dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature ?? '', 'base64url'),
    );
    return ok ? { verified: true, signerJwk: jwk } : { verified: false };
  } catch {
    return { verified: false };
  }
};

export const protocolCallbacks: Omit<CallbackContext, 'decryptJwe' | 'encryptJwe'> = {
  hash: (data, alg) => {
    if (alg !== HashAlgorithm.Sha256) throw new Oauth2Error(`unsupported hash ${alg}`);
    return createHash('sha256').update(data).digest();
  },
  generateRandom: (bytes) => randomBytes(bytes),
  verifyJwt: verifyJwkJwt,
  // The channel's tokens are opaque and its credentials are the SD-JWT issuer's; the one JWT it
  // signs through the libraries, its signed metadata, gets its own callback (signed-metadata.ts).
  signJwt: () => {
    throw new Oauth2Error('the OpenID4VCI channel signs no JWT through the protocol library');
  },
  clientAuthentication: clientAuthenticationAnonymous(),
};

export interface ProtocolLibraries {
  issuer: Openid4vciIssuer;
  authorizationServer: Oauth2AuthorizationServer;
}

/**
 * The libraries with another JWT check: for attestations, whose signer is a chain to trust anchors
 * the operator chose (x5c-trust.ts), beside the holder's own keys.
 */
export function librariesVerifying(verifyJwt: CallbackContext['verifyJwt']): ProtocolLibraries {
  const withCheck = { ...protocolCallbacks, verifyJwt };
  return {
    issuer: new Openid4vciIssuer({ callbacks: withCheck }),
    authorizationServer: new Oauth2AuthorizationServer({ callbacks: withCheck }),
  };
}

export function protocolLibraries(origin: string): ProtocolLibraries {
  // The library refuses http URLs (its own metadata's included) unless told otherwise, and tells
  // it process-wide. Production requires an https ISSUER_ORIGIN (src/config/config.ts), so only
  // a development or test origin on http turns this on.
  if (new URL(origin).protocol === 'http:') setGlobalConfig({ allowInsecureUrls: true });
  return {
    issuer: new Openid4vciIssuer({ callbacks: protocolCallbacks }),
    authorizationServer: new Oauth2AuthorizationServer({ callbacks: protocolCallbacks }),
  };
}
