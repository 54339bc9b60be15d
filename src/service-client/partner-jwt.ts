import type { IssuerIdentity } from '../identity/issuer-identity.js';
import type { ManagedKey } from '../keys/key-ring.js';
import { signJwt } from '../keys/sign-jwt.js';

/**
 * docs/interface.md "Authentication": the partner JWT for direct issuance. Header `{ alg, kid, typ: JWT }`;
 * claims partnerId, scope, iat, exp (5 minutes), iss. Cached until 30 s before expiry, and never
 * used while its `iat` is ahead of the clock (a clock stepped back would make the service refuse it).
 */
export class PartnerJwtSigner {
  private cached: { token: string; iat: number; exp: number; kid: string } | undefined;

  constructor(
    private readonly options: {
      /** The issuer the JWT speaks for: `iss` is its origin. */
      identity: Pick<IssuerIdentity, 'origin'>;
      partnerId: string;
      key: () => ManagedKey;
      lifetimeSeconds?: number;
      now?: () => number;
    },
  ) {}

  async token(): Promise<string> {
    const now = Math.floor((this.options.now?.() ?? Date.now()) / 1000);
    const key = this.options.key();
    const cached = this.cached;
    if (cached && cached.kid === key.kid && cached.iat <= now && cached.exp - 30 > now) return cached.token;
    const exp = now + (this.options.lifetimeSeconds ?? 300);
    // Signed by the key's backend (a PKCS#11 token with KEY_BACKEND=pkcs11).
    const token = await signJwt(
      { alg: key.alg, kid: key.kid, typ: 'JWT' },
      { partnerId: this.options.partnerId, scope: 'issue', iss: this.options.identity.origin, iat: now, exp },
      key.sign,
    );
    this.cached = { token, iat: now, exp, kid: key.kid };
    return token;
  }
}
