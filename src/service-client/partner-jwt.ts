import { SignJWT } from 'jose';
import type { ManagedKey } from '../keys/key-ring.js';

/**
 * docs/interface.md "Authentication": the partner JWT for direct issuance. Header `{ alg, kid, typ: JWT }`;
 * claims partnerId, scope, iat, exp (5 minutes), iss. Cached until 30 s before expiry, and never
 * used while its `iat` is ahead of the clock (a clock stepped back would make the service refuse it).
 */
export class PartnerJwtSigner {
  private cached: { token: string; iat: number; exp: number; kid: string } | undefined;

  constructor(
    private readonly options: {
      partnerId: string;
      issuerOrigin: string;
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
    const token = await new SignJWT({ partnerId: this.options.partnerId, scope: 'issue' })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setIssuer(this.options.issuerOrigin)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .sign(key.privateKey);
    this.cached = { token, iat: now, exp, kid: key.kid };
    return token;
  }
}
