import { Oauth2ServerErrorResponseError } from '@openid4vc/oauth2';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../../src/errors.js';
import {
  credentialRequestDenied,
  fromLibrary,
  invalidCredentialRequest,
  invalidDpopProof,
  invalidGrant,
  invalidNonce,
  invalidProof,
  unauthorized,
  unknownCredentialConfiguration,
  unsupportedGrantType,
  useDpopNonce,
} from '../../../src/oid4vci/errors.js';

// RFC 6749 §5.2, RFC 9449 §7.1 and §8, OpenID4VCI 1.0 §8.3.1.2: each constructor, its code and status.
describe('the OpenID4VCI channel’s named refusals', () => {
  it('answer 400 with their own error code and the words given', () => {
    const cases: Array<[(d: string) => ProtocolError, string]> = [
      [invalidGrant, 'invalid_grant'],
      [unsupportedGrantType, 'unsupported_grant_type'],
      [invalidDpopProof, 'invalid_dpop_proof'],
      [invalidCredentialRequest, 'invalid_credential_request'],
      [unknownCredentialConfiguration, 'unknown_credential_configuration'],
      [invalidProof, 'invalid_proof'],
      [invalidNonce, 'invalid_nonce'],
      [credentialRequestDenied, 'credential_request_denied'],
    ];
    for (const [make, error] of cases) {
      const err = make('why');
      expect(err).toBeInstanceOf(ProtocolError);
      expect({ status: err.status, error: err.error, description: err.description }).toEqual({
        status: 400,
        error,
        description: 'why',
      });
      expect(err.wwwAuthenticate).toBeUndefined();
      expect(err.headers).toBeUndefined();
    }
  });

  it('use_dpop_nonce carries the nonce to use as DPoP-Nonce', () => {
    const err = useDpopNonce('why', 'n-1');
    expect({ status: err.status, error: err.error, headers: err.headers }).toEqual({
      status: 400,
      error: 'use_dpop_nonce',
      headers: { 'DPoP-Nonce': 'n-1' },
    });
  });

  it('a 401 carries its challenge', () => {
    const err = unauthorized('invalid_token', 'why', 'Bearer');
    expect({ status: err.status, error: err.error, challenge: err.wwwAuthenticate }).toEqual({
      status: 401,
      error: 'invalid_token',
      challenge: 'Bearer',
    });
  });

  it('fromLibrary keeps the library’s code and words, and lets anything else through', () => {
    const refused = new Oauth2ServerErrorResponseError({
      error: 'invalid_request',
      error_description: 'bad',
    });
    expect(fromLibrary(refused, 'fallback')).toMatchObject({
      status: 400,
      error: 'invalid_request',
      description: 'bad',
    });
    const other = new Error('boom');
    expect(() => fromLibrary(other, 'fallback')).toThrow(other);
  });
});
