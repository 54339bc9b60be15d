import { didWebFromOrigin, type SdJwtIssuerMode } from '../issuer-urls.js';
import { chainProblems } from '../keys/certificates.js';
import { KeyError, type KeyRing, type ManagedKey } from '../keys/key-ring.js';

/** The JOSE header members that let a verifier find the signing key. */
export interface IssuerHeader {
  kid: string;
  x5c?: string[];
}

/**
 * `SD_JWT_ISSUER` (docs/security.md "Issuer identification (SD_JWT_ISSUER)"): how a verifier
 * finds the credential-signing key, for SD-JWT VCs and status list tokens alike.
 * - `url`: `iss` = ISSUER_ORIGIN, `kid` = the key's thumbprint, found in /.well-known/jwt-vc-issuer
 *   (draft-ietf-oauth-sd-jwt-vc "JWT VC Issuer Metadata").
 * - `did:web`: `iss` = the origin's did:web, `kid` = `<did>#<thumbprint>`, the verification method
 *   /.well-known/did.json lists.
 * - `x5c`: `iss` = ISSUER_ORIGIN, header `x5c` = the key's chain (RFC 7515 §4.1.6, leaf first),
 *   whose leaf names the origin's host; `kid` is kept so that the metadata lookup works as well.
 */
export class IssuerIdentification {
  readonly iss: string;

  constructor(
    readonly mode: SdJwtIssuerMode,
    private readonly origin: string,
  ) {
    this.iss = mode === 'did:web' ? didWebFromOrigin(origin) : origin;
  }

  header(key: ManagedKey): IssuerHeader {
    if (this.mode === 'did:web') return { kid: `${this.iss}#${key.kid}` };
    if (this.mode === 'x5c') {
      // assertUsable refused a key without a chain at start-up and at every reload.
      if (!key.x5c) throw new KeyError(`${key.file}: no x5c certificate chain (SD_JWT_ISSUER=x5c)`);
      return { kid: key.kid, x5c: key.x5c };
    }
    return { kid: key.kid };
  }

  /**
   * The `iss` of a status list token: the DID in `did:web` mode, so that a DID-JWT verifier can
   * resolve the `kid` it names (draft-ietf-oauth-status-list §5.1 allows `iss`); none in the other
   * modes, whose verifiers find the key through the token's `sub` origin or its `x5c` chain.
   */
  get statusListIssuer(): string | undefined {
    return this.mode === 'did:web' ? this.iss : undefined;
  }

  /**
   * Start-up and reload check: in `x5c` mode the active signing key must carry a chain that is
   * valid now, for this key and this origin; the error names the key file and every problem.
   */
  assertUsable(ring: KeyRing, now = new Date()): void {
    if (this.mode !== 'x5c') return;
    const key = ring.signing;
    const problems = key.x5c
      ? chainProblems(key.x5c, key.publicKey, this.origin, now)
      : [
          'privateJwk.x5c: no certificate chain; attach one with `npm run admin -- keys certificate <kid> <chain.pem>` (development: `npm run keys:generate -- --x5c`)',
        ];
    if (problems.length > 0) {
      throw new KeyError(
        `${key.file}: SD_JWT_ISSUER=x5c needs a valid chain for the active signing key:\n  ${problems.join('\n  ')}`,
      );
    }
  }
}
