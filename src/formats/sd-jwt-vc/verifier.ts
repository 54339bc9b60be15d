import { createHash, type X509Certificate } from 'node:crypto';
import {
  compactVerify,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  importJWK,
  type JWK,
  type JWSHeaderParameters,
  jwtVerify,
  type KeyInput,
} from 'jose';
import { type StatusBits, StatusList, StatusValue } from '../../status/status-list.js';
import { CheckFailure, Checks, refuse, type VerifyResult } from '../../verify/check.js';
import type { DocumentFetcher } from '../../verify/fetch-document.js';
import { IssuerKeys, SIGNATURE_ALGORITHMS } from '../../verify/issuer-keys.js';
import { processDisclosures, sdHasher } from './disclosures.js';

export interface SdJwtVcVerifyOptions {
  fetcher: DocumentFetcher;
  /** Certificates an `x5c` chain may end at (`--trust`); without them `x5c` is not used. */
  trustAnchors?: X509Certificate[] | undefined;
  now?: Date | undefined;
  /** The key binding JWT must carry these (RFC 9901 §7.3). */
  nonce?: string | undefined;
  aud?: string | undefined;
}

/** Clock difference tolerated on iat/nbf/exp. */
const SKEW_SECONDS = 60;
/** How old (or how far ahead) a key binding JWT's iat may be: RFC 9901 §7.3 leaves it to the verifier. */
const KB_MAX_AGE_SECONDS = 300;
/** draft-ietf-oauth-sd-jwt-vc: `dc+sd-jwt`; `vc+sd-jwt` is the name earlier drafts used. */
const SD_JWT_VC_TYPES = ['dc+sd-jwt', 'vc+sd-jwt'];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');

/** A JWT's claims once its `typ`, its signature by `key` with `alg`, and its times at `now` check out. */
async function verifiedClaims(
  jwt: string,
  key: KeyInput,
  typ: string,
  alg: string,
  now: Date,
): Promise<Record<string, unknown>> {
  const { payload } = await jwtVerify(jwt, key, {
    typ,
    algorithms: [alg],
    currentDate: now,
    clockTolerance: SKEW_SECONDS,
  });
  return payload as Record<string, unknown>;
}

/**
 * Verifies a compact SD-JWT VC (or a presentation of one with a key binding JWT) as a relying party
 * must: the issuer's signature with a key found by the issuer's identification mode, the
 * disclosures by RFC 9901 §7.1, the key binding by §7.3, validity times, type metadata integrity
 * (draft-ietf-oauth-sd-jwt-vc "Document Integrity") and the Token Status List entry
 * (draft-ietf-oauth-status-list). Every applicable check is reported; parsing and signatures are
 * `jose`'s and the SD-JWT library's.
 */
export async function verifySdJwtVc(compact: string, options: SdJwtVcVerifyOptions): Promise<VerifyResult> {
  const checks = new Checks();
  const now = options.now ?? new Date();
  const nowSeconds = Math.floor(now.getTime() / 1000);
  const keys = new IssuerKeys(options.fetcher, { trustAnchors: options.trustAnchors, now });

  // RFC 9901 §4: <issuer-signed JWT>~<disclosure>~…~<optional KB-JWT>
  const parts = compact.trim().split('~');
  const jwt = parts[0]!;
  const kbJwt = parts.length > 1 && parts.at(-1) !== '' ? parts.at(-1) : undefined;
  const disclosures = parts.slice(1, -1);
  let header: JWSHeaderParameters = {};
  let payload: Record<string, unknown> = {};
  const parsed = await checks.run(
    'format',
    () => {
      if (parts.length < 2) refuse('NOT_SD_JWT', 'no "~": not a compact SD-JWT');
      try {
        header = decodeProtectedHeader(jwt) as JWSHeaderParameters;
        payload = decodeJwt(jwt) as Record<string, unknown>;
      } catch {
        refuse('NOT_SD_JWT', 'the issuer-signed part is not a JWS compact serialization');
      }
      if (typeof header.typ !== 'string' || !SD_JWT_VC_TYPES.includes(header.typ))
        refuse('WRONG_TYP', `header typ ${JSON.stringify(header.typ)} is not dc+sd-jwt`);
      if (typeof payload.iss !== 'string') refuse('CLAIM_MISSING', 'no iss');
      if (typeof payload.vct !== 'string') refuse('CLAIM_MISSING', 'no vct');
      return `SD-JWT VC (${header.typ}), ${disclosures.length} disclosure(s)${kbJwt ? ', key binding JWT' : ''}`;
    },
    'NOT_SD_JWT',
  );
  if (!parsed) return { ok: false, format: 'sd-jwt-vc', checks: checks.list };
  const iss = payload.iss as string;
  keys.declareIssuer(iss);

  await checks.run(
    'signature',
    async () => {
      const found = await keys.keyFor(iss, header);
      try {
        await compactVerify(jwt, found.key, { algorithms: [header.alg!] });
      } catch (err) {
        if (err instanceof errors.JWSSignatureVerificationFailed)
          refuse('SIGNATURE_INVALID', `the issuer signature does not verify with ${found.source}`);
        throw new CheckFailure('SIGNATURE_INVALID', (err as Error).message);
      }
      return `${header.alg} by ${iss} (${found.mode}: ${found.source})`;
    },
    'SIGNATURE_INVALID',
  );

  let claims: Record<string, unknown> | undefined;
  await checks.run(
    'disclosures',
    () => {
      const result = processDisclosures(payload, disclosures);
      claims = result.claims;
      return `${result.disclosed} disclosure(s), each referenced once by the signed payload`;
    },
    'DISCLOSURE_MALFORMED',
  );

  if (kbJwt !== undefined || options.nonce !== undefined || options.aud !== undefined) {
    await checks.run('key binding', () => keyBinding(), 'KB_INVALID');
  }

  await checks.run('validity', () => validity(payload, nowSeconds), 'CLAIM_MALFORMED');

  if (payload['vct#integrity'] !== undefined) {
    await checks.run('type metadata', () => typeMetadata(), 'TYPE_METADATA_INTEGRITY');
  }

  if (payload.status !== undefined) {
    await checks.run('status', () => status(), 'STATUS_LIST_INVALID');
  }

  return { ok: checks.ok, format: 'sd-jwt-vc', checks: checks.list, ...(claims ? { claims } : {}) };

  // RFC 9901 §7.3: the KB-JWT is signed by the key in cnf, is of type kb+jwt, is fresh, names
  // this verifier's nonce and audience, and binds exactly these disclosures by sd_hash.
  async function keyBinding(): Promise<string> {
    if (kbJwt === undefined)
      return refuse('KB_MISSING', 'a nonce or audience was given, but there is no key binding JWT');
    const cnf = payload.cnf;
    if (!isObject(cnf) || !isObject(cnf.jwk))
      return refuse('KB_NO_HOLDER_KEY', 'the credential has no cnf.jwk to check the key binding JWT with');
    let kbHeader: JWSHeaderParameters;
    try {
      kbHeader = decodeProtectedHeader(kbJwt) as JWSHeaderParameters;
    } catch {
      return refuse('KB_INVALID', 'the key binding JWT is not a JWS');
    }
    if (typeof kbHeader.alg !== 'string' || !SIGNATURE_ALGORITHMS.includes(kbHeader.alg))
      refuse(
        'KB_INVALID',
        `key binding alg ${JSON.stringify(kbHeader.alg)} is not an asymmetric JWS algorithm`,
      );
    let kb: Record<string, unknown>;
    try {
      const holderKey = await importJWK(cnf.jwk as JWK, kbHeader.alg);
      kb = await verifiedClaims(kbJwt, holderKey, 'kb+jwt', kbHeader.alg!, now);
    } catch (err) {
      if (err instanceof errors.JWSSignatureVerificationFailed)
        return refuse('KB_SIGNATURE_INVALID', 'the key binding JWT is not signed by the cnf key');
      return refuse('KB_INVALID', `key binding JWT: ${(err as Error).message}`);
    }
    const { hasher } = sdHasher(payload._sd_alg);
    const expected = b64url(hasher(`${parts.slice(0, -1).join('~')}~`));
    if (kb.sd_hash !== expected)
      refuse(
        'KB_SD_HASH_MISMATCH',
        'sd_hash does not match the issuer-signed JWT and the disclosures presented',
      );
    if (typeof kb.iat !== 'number' || Math.abs(nowSeconds - kb.iat) > KB_MAX_AGE_SECONDS)
      refuse('KB_STALE', `iat ${String(kb.iat)} is not within ${KB_MAX_AGE_SECONDS} s of now`);
    if (options.nonce === undefined || options.aud === undefined)
      refuse(
        'KB_UNCHECKED',
        'give --nonce and --aud: the key binding JWT is checked against the nonce and audience expected',
      );
    if (kb.nonce !== options.nonce)
      refuse('KB_NONCE_MISMATCH', `nonce ${JSON.stringify(kb.nonce)} is not the nonce expected`);
    const aud = Array.isArray(kb.aud) ? kb.aud : [kb.aud];
    if (!aud.includes(options.aud))
      refuse('KB_AUD_MISMATCH', `aud ${JSON.stringify(kb.aud)} is not ${options.aud}`);
    return `signed by the holder key in cnf, for nonce ${options.nonce} and audience ${options.aud}`;
  }

  async function typeMetadata(): Promise<string> {
    const vct = payload.vct as string;
    const integrity = payload['vct#integrity'];
    if (typeof integrity !== 'string')
      return refuse('TYPE_METADATA_INTEGRITY', 'vct#integrity is not a string');
    if (!/^https?:\/\//.test(vct))
      return refuse('TYPE_METADATA_UNAVAILABLE', `vct ${vct} is not a URL to fetch`);
    const doc = await options.fetcher.get(vct, 'TYPE_METADATA_UNAVAILABLE');
    if (!subresourceIntegrity(integrity, doc.bytes))
      refuse('TYPE_METADATA_INTEGRITY', `${doc.url} does not match vct#integrity ${integrity}`);
    let meta: unknown;
    try {
      meta = JSON.parse(doc.text);
    } catch {
      return refuse('TYPE_METADATA_INTEGRITY', `${doc.url} is not JSON`);
    }
    if (!isObject(meta) || meta.vct !== vct)
      refuse('TYPE_METADATA_MISMATCH', `${doc.url} describes another vct`);
    return `${doc.url} matches vct#integrity`;
  }

  // draft-ietf-oauth-status-list: fetch the token, check it as the issuer's (same key
  // resolution), its sub is the referenced uri, it has not expired; then read the entry.
  async function status(): Promise<string> {
    const ref = isObject(payload.status) ? payload.status.status_list : undefined;
    if (
      !isObject(ref) ||
      typeof ref.uri !== 'string' ||
      !Number.isSafeInteger(ref.idx) ||
      (ref.idx as number) < 0
    )
      return refuse('STATUS_LIST_INVALID', 'status.status_list needs a uri and a non-negative integer idx');
    const { uri } = ref;
    const idx = ref.idx as number;
    const doc = await options.fetcher.get(uri, 'STATUS_UNAVAILABLE');
    const token = doc.text.trim();
    let tokenHeader: JWSHeaderParameters;
    try {
      tokenHeader = decodeProtectedHeader(token) as JWSHeaderParameters;
    } catch {
      return refuse('STATUS_LIST_INVALID', `${doc.url} is not a JWT`);
    }
    const found = await keys.keyFor(iss, tokenHeader);
    let claims: Record<string, unknown>;
    try {
      claims = await verifiedClaims(token, found.key, 'statuslist+jwt', tokenHeader.alg!, now);
    } catch (err) {
      if (err instanceof errors.JWSSignatureVerificationFailed)
        return refuse(
          'STATUS_LIST_SIGNATURE_INVALID',
          `${doc.url} is not signed by the issuer (${found.source})`,
        );
      return refuse('STATUS_LIST_INVALID', `${doc.url}: ${(err as Error).message}`);
    }
    if (claims.sub !== uri)
      refuse('STATUS_LIST_INVALID', `${doc.url}: sub ${String(claims.sub)} is not ${uri}`);
    const list = claims.status_list;
    if (!isObject(list) || typeof list.lst !== 'string' || ![1, 2, 4, 8].includes(list.bits as number))
      return refuse('STATUS_LIST_INVALID', `${doc.url}: status_list needs bits (1, 2, 4 or 8) and lst`);
    let value: number;
    try {
      value = StatusList.decode(list.lst, list.bits as StatusBits).get(idx);
    } catch (err) {
      return refuse('STATUS_LIST_INVALID', `${doc.url}: ${(err as Error).message}`);
    }
    if (value === StatusValue.INVALID) refuse('REVOKED', `revoked (entry ${idx} of ${uri})`);
    if (value === StatusValue.SUSPENDED) refuse('SUSPENDED', `suspended (entry ${idx} of ${uri})`);
    if (value !== StatusValue.VALID) refuse('STATUS_NOT_VALID', `status ${value} (entry ${idx} of ${uri})`);
    return `valid (entry ${idx} of ${uri}, signed ${found.mode}: ${found.source})`;
  }
}

/** RFC 7519 §4.1.4-4.1.6 with a small clock tolerance. */
function validity(payload: Record<string, unknown>, now: number): string {
  const time = (name: string): number | undefined => {
    const v = payload[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v))
      return refuse('CLAIM_MALFORMED', `${name} is not a NumericDate`);
    return v;
  };
  const [exp, nbf, iat] = [time('exp'), time('nbf'), time('iat')];
  const iso = (s: number) => new Date(s * 1000).toISOString();
  if (exp !== undefined && now >= exp + SKEW_SECONDS) refuse('EXPIRED', `expired at ${iso(exp)}`);
  if (nbf !== undefined && now < nbf - SKEW_SECONDS) refuse('NOT_YET_VALID', `not valid before ${iso(nbf)}`);
  if (iat !== undefined && now < iat - SKEW_SECONDS)
    refuse('ISSUED_IN_FUTURE', `issued at ${iso(iat)}, in the future`);
  return exp === undefined ? 'no expiry' : `valid until ${iso(exp)}`;
}

const SRI_ALGORITHMS: Record<string, number> = { sha256: 1, sha384: 2, sha512: 3 };

/**
 * W3C Subresource Integrity "Does response match metadataList?": of the listed digests, those of the strongest algorithm count,
 * and the document matches if any of them equals its digest.
 */
export function subresourceIntegrity(metadata: string, bytes: Buffer): boolean {
  const items = metadata
    .split(/\s+/)
    .map((token) => /^(sha256|sha384|sha512)-([A-Za-z0-9+/]+={0,2})(\?.*)?$/.exec(token))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ alg: m[1]!, digest: m[2]! }));
  if (items.length === 0) return false;
  const strongest = Math.max(...items.map((i) => SRI_ALGORITHMS[i.alg]!));
  return items
    .filter((i) => SRI_ALGORITHMS[i.alg] === strongest)
    .some((i) => createHash(i.alg).update(bytes).digest('base64') === i.digest);
}
