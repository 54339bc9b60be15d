import { decodeJwt, type RequestLike } from '@openid4vc/oauth2';
import type { Oid4vciStore } from '../store/store.js';
import { iatIsFresh, PROOF_IAT_WINDOW_SECONDS } from './dpop.js';
import { fromLibrary, invalidClient } from './errors.js';
import { librariesVerifying, type ProtocolLibraries, SIGNING_ALGS, sha256 } from './library.js';
import type { X5cTrust } from './x5c-trust.js';

/**
 * Wallet attestation at the token endpoint (OAuth 2.0 Attestation-Based Client Authentication,
 * the IETF draft HAIP 1.0 cites; OpenID4VCI 1.0 Appendix E): the `OAuth-Client-Attestation`
 * header, a JWT from the wallet provider naming the wallet (`sub`, its client_id) and the key it
 * holds (`cnf.jwk`), and `OAuth-Client-Attestation-PoP`, a JWT that key signed for this request.
 * The form of both, their signatures, `exp`, the PoP's `iss` = `sub` and `aud` = this issuer are
 * checked by `@openid4vc/oauth2`; the provider's chain (x5c to OID4VCI_WALLET_TRUST), ES256, the
 * PoP's `iat` window, its `jti` seen once (in the database, for every instance) and a `client_id`
 * equal to `sub` are checked here. Refusals are `invalid_client` (RFC 6749 §5.2).
 */

const ATTESTATION = 'OAuth-Client-Attestation';
const POP = 'OAuth-Client-Attestation-PoP';

export interface ClientAttestationDeps {
  /** The issuer identifier: the PoP's audience. */
  issuer: string;
  /** OID4VCI_WALLET_TRUST; without it an attestation cannot be trusted. */
  trust: X5cTrust | undefined;
  /** Under OID4VCI_PROFILE=haip: a token request without an attestation is refused. */
  required: boolean;
  store: Oid4vciStore;
  now: () => Date;
}

/** The wallet an attestation names. */
export interface AttestedClient {
  clientId: string;
}

export class ClientAttestationVerifier {
  private readonly libraries: ProtocolLibraries | undefined;

  constructor(private readonly deps: ClientAttestationDeps) {
    this.libraries = deps.trust ? librariesVerifying(deps.trust.verifyJwt(deps.now)) : undefined;
  }

  /** Whether the token endpoint takes attestations (its metadata says `attest_jwt_client_auth`). */
  get accepted(): boolean {
    return this.libraries !== undefined || this.deps.required;
  }

  /**
   * The attested wallet; undefined when none was sent and none is required (or, under `basic`,
   * none can be trusted: without OID4VCI_WALLET_TRUST the headers are ignored, as before).
   */
  async verify(request: RequestLike, clientId: unknown): Promise<AttestedClient | undefined> {
    const attestation = request.headers.get(ATTESTATION);
    const pop = request.headers.get(POP);
    const { trust, required } = this.deps;
    if (!attestation && !pop) {
      if (required)
        throw invalidClient(`a wallet attestation is required: send the ${ATTESTATION} and ${POP} headers`);
      return undefined;
    }
    if (!trust || !this.libraries) {
      if (required)
        throw invalidClient('this issuer trusts no wallet provider (OID4VCI_WALLET_TRUST is unset)');
      return undefined;
    }
    if (!attestation || !pop) throw invalidClient(`${ATTESTATION} and ${POP} are sent together`);
    const now = this.deps.now();
    let header: Record<string, unknown>;
    try {
      header = decodeJwt({ jwt: attestation }).header;
    } catch {
      throw invalidClient(`the ${ATTESTATION} header is not a JWT`);
    }
    if (!SIGNING_ALGS.includes(String(header.alg)))
      throw invalidClient(`the wallet attestation must be signed with ${SIGNING_ALGS.join(', ')}`);
    if (header.x5c === undefined)
      throw invalidClient("the wallet attestation must carry its provider's certificate chain (x5c)");
    const untrusted = trust.problem(header.x5c, now);
    if (untrusted)
      throw invalidClient(`the wallet attestation is not from a trusted wallet provider: ${untrusted}`);
    let verified: Awaited<ReturnType<ProtocolLibraries['authorizationServer']['verifyClientAttestation']>>;
    try {
      verified = await this.libraries.authorizationServer.verifyClientAttestation({
        authorizationServer: this.deps.issuer,
        clientAttestationJwt: attestation,
        clientAttestationPopJwt: pop,
        now,
      });
    } catch (err) {
      throw fromLibrary(err, 'invalid wallet attestation');
    }
    const { clientAttestation, clientAttestationPop } = verified;
    const sub = clientAttestation.payload.sub;
    if (!SIGNING_ALGS.includes(clientAttestationPop.header.alg))
      throw invalidClient(`the wallet attestation PoP must be signed with ${SIGNING_ALGS.join(', ')}`);
    if (clientId !== undefined && clientId !== sub)
      throw invalidClient("client_id is not the wallet attestation's sub");
    const { iat, exp, jti } = clientAttestationPop.payload;
    if (!iatIsFresh(iat, now))
      throw invalidClient(
        `the wallet attestation PoP's iat is missing or more than ${PROOF_IAT_WINDOW_SECONDS} s from the server's time`,
      );
    // Remembered for as long as the PoP could be accepted: until its exp, or its iat window ends.
    const until = Math.max(
      exp * 1000,
      (iat as number) * 1000 + PROOF_IAT_WINDOW_SECONDS * 1000,
      now.getTime(),
    );
    const first = await this.deps.store.rememberDpopProof(
      sha256(`client attestation pop jti\u0000${sub}\u0000${jti}`),
      new Date(until),
      now,
    );
    if (!first) throw invalidClient('this wallet attestation PoP (its jti) was already used');
    return { clientId: sub };
  }
}
