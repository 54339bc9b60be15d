import {
  type Oauth2AuthorizationServer,
  Oauth2ServerErrorResponseError,
  type RequestLike,
} from '@openid4vc/oauth2';
import type { Oid4vciStore } from '../store/store.js';
import { invalidDpopProof, useDpopNonce } from './errors.js';
import { random, sha256 } from './library.js';

/**
 * DPoP on the OpenID4VCI channel (RFC 9449; docs/interface.md "OpenID4VCI: the wallet door"). The
 * proof's form, signature, `htm`, `htu`, `ath` and key thumbprint are checked by
 * `@openid4vc/oauth2`; what it leaves to the server is checked here, against state in the
 * database so that every instance agrees: the proof's age, its `jti` seen once, and the
 * server-provided nonce when OID4VCI_DPOP_NONCE=required.
 */

/**
 * How far a proof's `iat` may be from the server's clock, either way (RFC 9449 §11.1: "a
 * relatively short window"), for DPoP proofs and for the credential request's `jwt` proofs.
 */
export const PROOF_IAT_WINDOW_SECONDS = 300;
/** How long a server-provided DPoP nonce is accepted. */
export const DPOP_NONCE_SECONDS = 300;

/** OID4VCI_DPOP_NONCE: `required` asks every DPoP proof for a nonce of ours (RFC 9449 §8). */
export const DPOP_NONCE_MODES = ['required', 'off'] as const;
export type DpopNonceMode = (typeof DPOP_NONCE_MODES)[number];

/** Whether a JWT's `iat` (seconds) lies within PROOF_IAT_WINDOW_SECONDS of `now`. */
export function iatIsFresh(iat: unknown, now: Date): boolean {
  if (typeof iat !== 'number' || !Number.isFinite(iat)) return false;
  return Math.abs(now.getTime() / 1000 - iat) <= PROOF_IAT_WINDOW_SECONDS;
}

/**
 * The error codes a challenge may name, each with the only description it is sent with: the
 * header carries server-chosen text alone, never a value from the request. RFC 6750 §3 limits
 * both to %x20-21 / %x23-5B / %x5D-7E, so neither needs escaping inside its quotes.
 */
const CHALLENGE_DESCRIPTIONS = {
  invalid_token: 'The access token is missing, unknown, expired or already used',
  invalid_dpop_proof: 'The DPoP proof is missing or invalid',
  use_dpop_nonce: 'The DPoP proof must carry the nonce of the DPoP-Nonce header',
} as const;
export type ChallengeError = keyof typeof CHALLENGE_DESCRIPTIONS;

/** RFC 6750 §3: keeps only the characters an auth-param value may hold. */
const authParamValue = (text: string): string => text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, ' ');

/**
 * `WWW-Authenticate` of the credential endpoint (RFC 6750 §3, RFC 9449 §7.1): a `Bearer`
 * challenge unless DPoP is required, a `DPoP` one with its algorithms; `use_dpop_nonce` is the
 * DPoP scheme's alone (RFC 9449 §9).
 */
export function challengeHeader(options: {
  bearer: boolean;
  algs: readonly string[];
  error?: ChallengeError;
}): string {
  const { error } = options;
  const errorParams = error
    ? [`error="${error}"`, `error_description="${authParamValue(CHALLENGE_DESCRIPTIONS[error])}"`]
    : [];
  const dpop = ['DPoP', [...errorParams, `algs="${authParamValue(options.algs.join(' '))}"`].join(', ')].join(
    ' ',
  );
  if (!options.bearer || error === 'use_dpop_nonce') return dpop;
  return [errorParams.length ? `Bearer ${errorParams.join(', ')}` : 'Bearer', dpop].join(', ');
}

export interface DpopProofCheck {
  request: RequestLike;
  jwt: string;
  /** At a protected resource: the access token the proof must name (`ath`). */
  accessToken?: string;
  /** The key the access token is bound to. */
  expectedJwkThumbprint?: string;
}

export interface DpopVerifierDeps {
  authorizationServer: Oauth2AuthorizationServer;
  store: Oid4vciStore;
  nonce: DpopNonceMode;
  signingAlgs: string[];
  now: () => Date;
}

/**
 * Verifies DPoP proofs. A refusal is a 400 `ProtocolError` (`invalid_dpop_proof`, or
 * `use_dpop_nonce` with a fresh `DPoP-Nonce` header), as the token endpoint answers it; the
 * credential endpoint turns it into its 401 with a challenge.
 */
export class DpopVerifier {
  constructor(private readonly deps: DpopVerifierDeps) {}

  /** The proof's key thumbprint (RFC 7638), once every check passed and its `jti` was recorded. */
  async verify(check: DpopProofCheck): Promise<string> {
    const now = this.deps.now();
    let verified: Awaited<ReturnType<Oauth2AuthorizationServer['verifyDpopJwt']>>;
    try {
      verified = await this.deps.authorizationServer.verifyDpopJwt({
        dpopJwt: check.jwt,
        request: check.request,
        accessToken: check.accessToken,
        expectedJwkThumbprint: check.expectedJwkThumbprint,
        allowedSigningAlgs: this.deps.signingAlgs,
        now,
      });
    } catch (err) {
      if (err instanceof Oauth2ServerErrorResponseError)
        throw invalidDpopProof(err.errorResponse.error_description ?? 'invalid DPoP proof');
      throw err;
    }
    const { payload, jwkThumbprint } = verified;
    // RFC 9449 §4.3 check 11 and §11.1.
    if (!iatIsFresh(payload.iat, now))
      throw invalidDpopProof(
        `the proof's iat is more than ${PROOF_IAT_WINDOW_SECONDS} s from the server's time`,
      );
    // RFC 9449 §8 (token endpoint) and §9 (resource server).
    if (this.deps.nonce === 'required') {
      const expiry =
        typeof payload.nonce === 'string' ? await this.deps.store.dpopNonceExpiry(payload.nonce) : undefined;
      if (expiry === undefined || expiry <= now)
        throw useDpopNonce(
          'the DPoP proof must carry the nonce of the DPoP-Nonce header',
          await this.issueNonce(now),
        );
    }
    // RFC 9449 §11.1: a proof is accepted once, by any instance, for as long as its iat is fresh.
    const expiresAt = new Date(Math.max(payload.iat * 1000, now.getTime()) + PROOF_IAT_WINDOW_SECONDS * 1000);
    const first = await this.deps.store.rememberDpopProof(
      sha256(`dpop jti\u0000${jwkThumbprint}\u0000${payload.jti}`),
      expiresAt,
      now,
    );
    if (!first) throw invalidDpopProof('this DPoP proof (its jti) was already used');
    return jwkThumbprint;
  }

  /** Headers of a successful answer to a DPoP request: the next nonce to use, when nonces are required. */
  async answerHeaders(): Promise<Record<string, string>> {
    if (this.deps.nonce !== 'required') return {};
    return { 'DPoP-Nonce': await this.issueNonce(this.deps.now()) };
  }

  private async issueNonce(now: Date): Promise<string> {
    const nonce = random(24);
    await this.deps.store.createDpopNonce(nonce, new Date(now.getTime() + DPOP_NONCE_SECONDS * 1000));
    return nonce;
  }
}
