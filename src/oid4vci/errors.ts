import { Oauth2ErrorCodes, Oauth2ServerErrorResponseError } from '@openid4vc/oauth2';
import { ProtocolError } from '../errors.js';

/**
 * The OpenID4VCI channel's refusals, one constructor per error code it answers. Each is a
 * `ProtocolError`, which the error handler writes as RFC 6749 §5.2's body (`error`,
 * `error_description`) with its status and headers.
 */

// RFC 6749 §5.2: the token endpoint.

export const invalidGrant = (description: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.InvalidGrant, description);

export const unsupportedGrantType = (description: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.UnsupportedGrantType, description);

// RFC 9449 §7.1 and §8: DPoP proofs at the token endpoint (the credential endpoint's are 401s).

export const invalidDpopProof = (description: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.InvalidDpopProof, description);

/** RFC 9449 §8: the proof lacks our nonce; `nonce` is the one to use, sent as `DPoP-Nonce`. */
export const useDpopNonce = (description: string, nonce: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.UseDpopNonce, description, undefined, { 'DPoP-Nonce': nonce });

// OpenID4VCI 1.0 §8.3.1.2: the credential endpoint.

export const invalidCredentialRequest = (description: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.InvalidCredentialRequest, description);

export const unknownCredentialConfiguration = (description: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.UnknownCredentialConfiguration, description);

export const invalidProof = (description: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.InvalidProof, description);

export const invalidNonce = (description: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.InvalidNonce, description);

export const credentialRequestDenied = (description: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.CredentialRequestDenied, description);

/**
 * RFC 6750 §3.1 / RFC 9449 §7.1: the credential endpoint's 401 (`invalid_token`,
 * `invalid_dpop_proof` or `use_dpop_nonce`) with its `WWW-Authenticate` challenge.
 */
export const unauthorized = (
  error: string,
  description: string,
  wwwAuthenticate: string,
  headers?: Readonly<Record<string, string>>,
) => new ProtocolError(401, error, description, wwwAuthenticate, headers);

/**
 * A refusal of the protocol library as ours (the library chose the code and the words); anything
 * else it threw is not a refusal and goes on.
 */
export function fromLibrary(err: unknown, fallback: string): ProtocolError {
  if (err instanceof Oauth2ServerErrorResponseError) {
    return new ProtocolError(
      err.status === 401 ? 401 : 400,
      err.errorResponse.error,
      err.errorResponse.error_description ?? fallback,
    );
  }
  throw err;
}
