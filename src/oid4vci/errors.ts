import { Oauth2ErrorCodes, Oauth2ServerErrorResponseError } from '@openid4vc/oauth2';
import { ProtocolError } from '../errors.js';

/**
 * The OpenID4VCI channel's refusals, one constructor per error code it answers. Each is a
 * `ProtocolError`, which the error handler writes as RFC 6749 §5.2's body (`error`,
 * `error_description`) with its status and headers.
 */

/** A 400 refusal with `error` = `code` and the words given. */
const refusal =
  (code: Oauth2ErrorCodes | string) =>
  (description: string): ProtocolError =>
    new ProtocolError(400, code, description);

// RFC 6749 §5.2: the token endpoint.
export const invalidGrant = refusal(Oauth2ErrorCodes.InvalidGrant);
export const unsupportedGrantType = refusal(Oauth2ErrorCodes.UnsupportedGrantType);

/**
 * RFC 6749 §5.2: the client (the wallet) is not authenticated: its attestation is missing,
 * untrusted, expired or replayed (OAuth 2.0 Attestation-Based Client Authentication).
 */
export const invalidClient = (description: string) =>
  new ProtocolError(401, Oauth2ErrorCodes.InvalidClient, description);

// RFC 6749 §4.1.2.1 and §5.2, RFC 9126 §2.3, RFC 9396 §5: the authorization code flow.
export const invalidRequest = refusal(Oauth2ErrorCodes.InvalidRequest);
export const invalidScope = refusal(Oauth2ErrorCodes.InvalidScope);
export const invalidTarget = refusal(Oauth2ErrorCodes.InvalidTarget);
export const unsupportedResponseType = refusal('unsupported_response_type');
export const invalidAuthorizationDetails = refusal('invalid_authorization_details');

// RFC 9449 §7.1 and §8: DPoP proofs at the token endpoint (the credential endpoint's are 401s).
export const invalidDpopProof = refusal(Oauth2ErrorCodes.InvalidDpopProof);

/** RFC 9449 §8: the proof lacks our nonce; `nonce` is the one to use, sent as `DPoP-Nonce`. */
export const useDpopNonce = (description: string, nonce: string) =>
  new ProtocolError(400, Oauth2ErrorCodes.UseDpopNonce, description, undefined, { 'DPoP-Nonce': nonce });

// OpenID4VCI 1.0 §8.3.1.2: the credential endpoint.
export const invalidCredentialRequest = refusal(Oauth2ErrorCodes.InvalidCredentialRequest);
export const unknownCredentialConfiguration = refusal(Oauth2ErrorCodes.UnknownCredentialConfiguration);
export const invalidProof = refusal(Oauth2ErrorCodes.InvalidProof);
export const invalidNonce = refusal(Oauth2ErrorCodes.InvalidNonce);
export const credentialRequestDenied = refusal(Oauth2ErrorCodes.CredentialRequestDenied);
export const invalidEncryptionParameters = refusal(Oauth2ErrorCodes.InvalidEncryptionParameters);

// OpenID4VCI 1.0 §9.3: the deferred credential endpoint.
export const invalidTransactionId = refusal(Oauth2ErrorCodes.InvalidTransactionId);

// OpenID4VCI 1.0 §11.3: the notification endpoint (codes the oauth2 library does not list).
export const invalidNotificationId = (description: string): ProtocolError =>
  new ProtocolError(400, 'invalid_notification_id', description);
export const invalidNotificationRequest = (description: string): ProtocolError =>
  new ProtocolError(400, 'invalid_notification_request', description);

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
