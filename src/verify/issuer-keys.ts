import { type KeyObject, X509Certificate } from 'node:crypto';
import { type CryptoKey, importJWK, type JWK, type JWSHeaderParameters } from 'jose';
import { chainProblems } from '../keys/certificates.js';
import { CheckFailure, refuse } from './check.js';
import type { DocumentFetcher } from './fetch-document.js';

/** Asymmetric JWS algorithms a credential may be signed with; `none` and HMAC never. */
export const SIGNATURE_ALGORITHMS = [
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
  'PS256',
  'PS384',
  'PS512',
  'RS256',
  'RS384',
  'RS512',
];

export type IdentificationMode = 'url' | 'did:web' | 'x5c';

export interface IssuerKey {
  key: KeyObject | CryptoKey | Uint8Array;
  mode: IdentificationMode;
  /** Where the key came from, for the PASS line. */
  source: string;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** did:web method §3.2 (read): `did:web:host%3Aport:a:b` → `https://host:port/a/b/did.json`. */
export function didWebDocumentUrl(did: string): { url: string; host: string } {
  const parts = did.split(':');
  if (parts.length < 3 || parts[0] !== 'did' || parts[1] !== 'web' || !parts[2])
    return refuse('ISSUER_UNRESOLVABLE', `${did} is not a did:web`);
  const host = decodeURIComponent(parts[2]);
  const path = parts.slice(3).map(decodeURIComponent);
  const url = new URL(`https://${host}`);
  url.pathname = path.length ? `/${path.join('/')}/did.json` : '/.well-known/did.json';
  return { url: url.toString(), host: url.host };
}

/** Trust anchors for x5c chains: every certificate of a PEM file. */
export function trustAnchorsFromPem(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error('no PEM certificate in the trust anchor file');
  return blocks.map((b) => new X509Certificate(b));
}

/**
 * Finds the key that signed a JWS of this issuer (an SD-JWT VC or its status list token), the way
 * draft-ietf-oauth-sd-jwt-vc lets a verifier: an `x5c` header chain to a trust anchor whose
 * leaf names the issuer's host (RFC 7515 §4.1.6) when anchors are given; a `did:web` issuer's
 * verification method (its assertionMethod) from did.json; otherwise the `kid` in the issuer's
 * `/.well-known/jwt-vc-issuer` metadata ("JWT VC Issuer Metadata"). Fetched documents are kept
 * for the next JWS of the same issuer.
 */
export class IssuerKeys {
  readonly #documents = new Map<string, Promise<unknown>>();

  constructor(
    private readonly fetcher: DocumentFetcher,
    private readonly options: { trustAnchors?: X509Certificate[] | undefined; now: Date },
  ) {}

  #json(url: string, code: string): Promise<unknown> {
    let doc = this.#documents.get(url);
    if (!doc) {
      doc = this.fetcher.json(url, code);
      this.#documents.set(url, doc);
    }
    return doc;
  }

  /** Declares the issuer's hosts to the fetcher, so that `--origin` applies to them. */
  declareIssuer(iss: string): void {
    if (iss.startsWith('did:web:')) this.fetcher.addIssuerHost(didWebDocumentUrl(iss).host);
    else if (URL.canParse(iss)) this.fetcher.addIssuerHost(new URL(iss).host);
  }

  async keyFor(iss: string, header: JWSHeaderParameters): Promise<IssuerKey> {
    if (typeof header.alg !== 'string' || !SIGNATURE_ALGORITHMS.includes(header.alg))
      refuse(
        'UNSUPPORTED_ALG',
        `header alg ${JSON.stringify(header.alg)} is not an asymmetric JWS algorithm`,
      );
    if (header.x5c !== undefined && this.options.trustAnchors) return this.#x5c(iss, header);
    if (iss.startsWith('did:web:')) return this.#didWeb(iss, header);
    if (iss.startsWith('did:'))
      return refuse('ISSUER_UNRESOLVABLE', `${iss}: only did:web issuers are resolved`);
    return this.#metadata(iss, header);
  }

  #x5c(iss: string, header: JWSHeaderParameters): IssuerKey {
    const x5c = header.x5c;
    if (!Array.isArray(x5c) || x5c.length === 0 || !x5c.every((c) => typeof c === 'string'))
      return refuse('X5C_INVALID', 'header x5c is not a list of base64 certificates');
    if (!URL.canParse(iss))
      return refuse('X5C_NAME_MISMATCH', `iss ${iss} is not a URL whose host a certificate can name`);
    let certs: X509Certificate[];
    try {
      certs = x5c.map((c) => new X509Certificate(Buffer.from(c, 'base64')));
    } catch {
      return refuse('X5C_INVALID', 'header x5c holds something that is not a DER X.509 certificate');
    }
    const leaf = certs[0]!;
    const problems = chainProblems(x5c, leaf.publicKey, iss, this.options.now);
    const naming = problems.find((p) => p.includes('subjectAltName'));
    if (naming) refuse('X5C_NAME_MISMATCH', naming);
    if (problems.length > 0) refuse('X5C_INVALID', problems.join('; '));
    const last = certs.at(-1)!;
    const now = this.options.now.getTime();
    const anchor = this.options.trustAnchors?.find(
      (a) =>
        now >= Date.parse(a.validFrom) &&
        now <= Date.parse(a.validTo) &&
        (Buffer.from(a.raw).equals(Buffer.from(last.raw)) ||
          (last.checkIssued(a) && last.verify(a.publicKey))),
    );
    if (!anchor)
      return refuse(
        'X5C_UNTRUSTED',
        `the chain ends at ${last.issuer.replace(/\n/g, ', ')}, which no trust anchor issued`,
      );
    return {
      key: leaf.publicKey,
      mode: 'x5c',
      source: `x5c chain of ${certs.length} to ${anchor.subject.replace(/\n/g, ', ')}`,
    };
  }

  async #didWeb(did: string, header: JWSHeaderParameters): Promise<IssuerKey> {
    const { url } = didWebDocumentUrl(did);
    const doc = await this.#json(url, 'ISSUER_UNRESOLVABLE');
    if (!isObject(doc) || doc.id !== did)
      return refuse('ISSUER_UNRESOLVABLE', `${url}: the document's id is not ${did}`);
    const kid =
      typeof header.kid === 'string'
        ? header.kid.startsWith('#')
          ? `${did}${header.kid}`
          : header.kid
        : undefined;
    if (!kid?.startsWith(`${did}#`))
      return refuse('KEY_NOT_FOUND', `header kid ${String(header.kid)} is not a key of ${did}`);
    const full = (id: unknown) => (typeof id === 'string' && id.startsWith('#') ? `${did}${id}` : id);
    const methods = Array.isArray(doc.verificationMethod) ? doc.verificationMethod.filter(isObject) : [];
    const assertion = Array.isArray(doc.assertionMethod) ? doc.assertionMethod : [];
    const embedded = assertion.filter(isObject).find((m) => full(m.id) === kid);
    const referenced = assertion.some((m) => full(m) === kid);
    const method = embedded ?? (referenced ? methods.find((m) => full(m.id) === kid) : undefined);
    if (!method) return refuse('KEY_NOT_FOUND', `${url}: ${kid} is not an assertionMethod of ${did}`);
    if (!isObject(method.publicKeyJwk)) return refuse('KEY_NOT_FOUND', `${url}: ${kid} has no publicKeyJwk`);
    return {
      key: await importKey(method.publicKeyJwk as JWK, header.alg!),
      mode: 'did:web',
      source: `${kid} in ${url}`,
    };
  }

  async #metadata(iss: string, header: JWSHeaderParameters): Promise<IssuerKey> {
    if (!URL.canParse(iss)) return refuse('ISSUER_UNRESOLVABLE', `iss ${iss} is neither a URL nor a did:web`);
    const issuer = new URL(iss);
    // draft-ietf-oauth-sd-jwt-vc "JWT VC Issuer Metadata": the well-known part goes between host and path.
    const url = `${issuer.origin}/.well-known/jwt-vc-issuer${issuer.pathname.replace(/\/$/, '')}`;
    const meta = await this.#json(url, 'ISSUER_UNRESOLVABLE');
    if (!isObject(meta) || meta.issuer !== iss)
      return refuse('ISSUER_UNRESOLVABLE', `${url}: metadata issuer is not ${iss}`);
    let jwks = meta.jwks;
    if (jwks === undefined && typeof meta.jwks_uri === 'string') {
      this.fetcher.addIssuerHost(new URL(meta.jwks_uri).host);
      jwks = await this.#json(meta.jwks_uri, 'ISSUER_UNRESOLVABLE');
    }
    const keys = isObject(jwks) && Array.isArray(jwks.keys) ? (jwks.keys.filter(isObject) as JWK[]) : [];
    const jwk =
      header.kid !== undefined
        ? keys.find((k) => k.kid === header.kid)
        : keys.length === 1
          ? keys[0]
          : undefined;
    if (!jwk) return refuse('KEY_NOT_FOUND', `${url}: no key ${String(header.kid ?? '(header has no kid)')}`);
    return { key: await importKey(jwk, header.alg!), mode: 'url', source: `kid ${jwk.kid ?? '-'} in ${url}` };
  }
}

async function importKey(jwk: JWK, alg: string): Promise<KeyObject | CryptoKey | Uint8Array> {
  if ('d' in jwk) refuse('KEY_NOT_FOUND', 'the published key has a private member (d)');
  try {
    return await importJWK(jwk, alg);
  } catch (err) {
    throw new CheckFailure(
      'KEY_NOT_FOUND',
      `the published key does not import for ${alg}: ${(err as Error).message}`,
    );
  }
}
