import type { JWK, JWSHeaderParameters, JWTPayload, JWTVerifyGetKey } from 'jose';
import { createLocalJWKSet, createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { EmulatorError, unauthorized } from './errors.js';

/** A URL of the issuer's `/.well-known/jwks.json`, or a function returning the JWKS in-process. */
export type JwksSource = string | (() => Promise<{ keys: JWK[] }>);

export interface PartnerClaims {
  partnerId: string;
  scope: string | string[];
  iat?: number;
  exp: number;
}

export interface PartnerVerifierOptions {
  jwks: JwksSource;
  partnerId?: string;
  now: () => Date;
}

export type PartnerVerifier = (token: string | undefined) => Promise<PartnerClaims>;

export const PARTNER_AUTH_HEADER = 'x-partner-auth';

// docs/interface.md "Authentication": RS256 or ES256, lifetime at most 5 minutes.
const ALGORITHMS = ['ES256', 'RS256'];
const MAX_LIFETIME_SECONDS = 5 * 60;
const CLOCK_SKEW_SECONDS = 30;

interface KeySource {
  getKey: JWTVerifyGetKey;
  /** In-process sources: a fingerprint of the current key set, so a verified token can be reused. */
  fingerprint?: () => Promise<string>;
  /** The keys last seen, to tell an unknown kid from a kid whose key does not fit the alg. */
  knownKeys: () => JWK[];
}

function localKeySource(load: () => Promise<{ keys: JWK[] }>): KeySource {
  let keys: JWK[] = [];
  // The key set is rebuilt only when the JWKS changes: importing keys costs more than verifying.
  let cached: { json: string; getKey: JWTVerifyGetKey } | undefined;
  return {
    // Loaded on every request: the in-process issuer answers from memory, and a key it has just
    // rotated in must be accepted at once.
    getKey: async (header, token) => {
      let jwks: { keys: JWK[] };
      try {
        jwks = await load();
      } catch {
        throw unauthorized('partner JWKS could not be loaded');
      }
      keys = jwks.keys;
      const json = JSON.stringify(jwks.keys);
      if (cached?.json !== json) cached = { json, getKey: createLocalJWKSet(jwks) };
      return cached.getKey(header, token);
    },
    fingerprint: async () => JSON.stringify((await load()).keys),
    knownKeys: () => keys,
  };
}

function remoteKeySource(url: string): KeySource {
  // A short cooldown so that a key the issuer has just rotated in is fetched within a second.
  const remote = createRemoteJWKSet(new URL(url), { cooldownDuration: 1_000, timeoutDuration: 3_000 });
  return { getKey: remote, knownKeys: () => (remote.jwks()?.keys ?? []) as JWK[] };
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

function checkHeader(token: string): JWSHeaderParameters & { kid: string; alg: string } {
  let header: JWSHeaderParameters;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    throw unauthorized(`${PARTNER_AUTH_HEADER}: not a compact JWT`);
  }
  // docs/interface.md "Authentication": typ must equal JWT (exactly; `at+jwt` and friends are other token kinds).
  if (header.typ !== 'JWT') throw unauthorized(`${PARTNER_AUTH_HEADER}: header typ must be "JWT"`);
  const kid = str(header.kid);
  if (kid === undefined) throw unauthorized(`${PARTNER_AUTH_HEADER}: header kid missing`);
  const alg = str(header.alg);
  if (alg === undefined || !ALGORITHMS.includes(alg)) {
    throw unauthorized(`${PARTNER_AUTH_HEADER}: header alg must be ES256 or RS256`);
  }
  return { ...header, kid, alg };
}

function mapVerifyError(err: unknown, kid: string, alg: string, source: KeySource): EmulatorError {
  if (err instanceof EmulatorError) return err;
  if (err instanceof errors.JWKSNoMatchingKey) {
    const kidKnown = source.knownKeys().some((k) => k.kid === kid);
    return unauthorized(
      kidKnown
        ? `${PARTNER_AUTH_HEADER}: the key with kid "${kid}" does not fit alg ${alg}`
        : `${PARTNER_AUTH_HEADER}: unknown kid "${kid}"`,
    );
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) {
    return unauthorized(`${PARTNER_AUTH_HEADER}: bad signature`);
  }
  if (err instanceof errors.JWTExpired) return unauthorized(`${PARTNER_AUTH_HEADER}: expired`);
  if (err instanceof errors.JWTClaimValidationFailed) {
    return unauthorized(`${PARTNER_AUTH_HEADER}: ${err.message}`);
  }
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) {
    return unauthorized(`${PARTNER_AUTH_HEADER}: malformed JWT`);
  }
  // Anything else comes from fetching or parsing the JWKS (timeout, non-200, bad JSON).
  return unauthorized('partner JWKS could not be loaded');
}

function checkClaims(payload: JWTPayload, expectedPartnerId: string | undefined, now: number): PartnerClaims {
  const partnerId = str(payload.partnerId);
  if (partnerId === undefined) throw unauthorized(`${PARTNER_AUTH_HEADER}: claim partnerId missing`);
  if (expectedPartnerId !== undefined && partnerId !== expectedPartnerId) {
    throw unauthorized(`${PARTNER_AUTH_HEADER}: claim partnerId does not match this partner`);
  }
  const scope = payload.scope;
  const scopeOk =
    str(scope) !== undefined ||
    (Array.isArray(scope) && scope.length > 0 && scope.every((s) => str(s) !== undefined));
  if (!scopeOk) throw unauthorized(`${PARTNER_AUTH_HEADER}: claim scope missing`);
  // jose has already required exp and checked it is in the future.
  const exp = payload.exp as number;
  const iat = payload.iat;
  if (iat !== undefined && iat > now + CLOCK_SKEW_SECONDS) {
    throw unauthorized(`${PARTNER_AUTH_HEADER}: claim iat is in the future`);
  }
  if (exp - (iat ?? now) > MAX_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS) {
    throw unauthorized(`${PARTNER_AUTH_HEADER}: claim exp is more than 5 minutes after iat`);
  }
  return { partnerId, scope: scope as string | string[], exp, ...(iat === undefined ? {} : { iat }) };
}

/** Verifies the partner JWT of the direct-issuance routes (docs/interface.md "Direct issuance", "Authentication"); throws 401 naming the failure. */
export function createPartnerVerifier(options: PartnerVerifierOptions): PartnerVerifier {
  const source =
    typeof options.jwks === 'string' ? remoteKeySource(options.jwks) : localKeySource(options.jwks);
  // The issuer reuses one token for minutes: a token already verified against the same key set
  // only needs its expiry checked again (in-process key sources only).
  const verified = new Map<string, { keys: string; claims: PartnerClaims }>();
  return async (token) => {
    if (token === undefined || token.length === 0) {
      throw unauthorized(`${PARTNER_AUTH_HEADER} header missing`);
    }
    const currentDate = options.now();
    const nowSeconds = Math.floor(currentDate.getTime() / 1000);
    const keys = await source.fingerprint?.().catch(() => undefined);
    const hit = verified.get(token);
    if (hit && keys !== undefined && hit.keys === keys && hit.claims.exp + CLOCK_SKEW_SECONDS > nowSeconds) {
      return hit.claims;
    }
    const { kid, alg } = checkHeader(token);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, source.getKey, {
        algorithms: ALGORITHMS,
        typ: 'JWT',
        currentDate,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      throw mapVerifyError(err, kid, alg, source);
    }
    const claims = checkClaims(payload, options.partnerId, nowSeconds);
    if (keys !== undefined) {
      if (verified.size >= 256) verified.clear();
      verified.set(token, { keys, claims });
    }
    return claims;
  };
}
