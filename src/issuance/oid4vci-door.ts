import { createHash, createPublicKey, randomBytes, timingSafeEqual, verify } from 'node:crypto';
import {
  type AuthorizationServerMetadata,
  type CallbackContext,
  clientAuthenticationAnonymous,
  decodeJwt,
  HashAlgorithm,
  type Jwk,
  Oauth2AuthorizationServer,
  Oauth2Error,
  Oauth2ErrorCodes,
  Oauth2ServerErrorResponseError,
  preAuthorizedCodeGrantIdentifier,
  type RequestLike,
} from '@openid4vc/oauth2';
import {
  type CredentialConfigurationsSupported,
  type CredentialIssuerMetadata,
  type IssuerMetadataResult,
  Openid4vciIssuer,
  Openid4vciVersion,
  setGlobalConfig,
} from '@openid4vc/openid4vci';
import { AppError, invalidParameter, ProtocolError } from '../errors.js';
import {
  assertPublicKey,
  type HolderBindingJwk,
  HolderBindingJwkSchema,
} from '../issuers/holder-binding-key.js';
import type { AuditActor } from '../model.js';
import type { LoadedSchema, SchemaRegistry } from '../schemas/schema-registry.js';
import type { Oid4vciOffer, Oid4vciStore } from '../store/store.js';
import type { EmailHasher } from './email-hash.js';
import type { IssuanceCore } from './issuance-core.js';
import {
  type ChallengeError,
  challengeHeader,
  type DpopNonceMode,
  DpopVerifier,
  iatIsFresh,
  PROOF_IAT_WINDOW_SECONDS,
} from './oid4vci-dpop.js';

/**
 * The OpenID4VCI door (OpenID for Verifiable Credential Issuance 1.0, pre-authorized code flow;
 * docs/interface.md "OpenID4VCI: the wallet door"): an admin's credential offer, the token
 * endpoint that exchanges its pre-authorized code, the nonce endpoint and the credential endpoint.
 * The protocol messages are parsed and checked by `@openid4vc/openid4vci` and `@openid4vc/oauth2`;
 * what is ours is the state (offers, codes, tokens and nonces in the database, so any instance
 * answers any step) and the issuance, which is the core's like every other channel's.
 */

/** How long an offer (and its pre-authorized code) stays redeemable unless the admin says otherwise. */
export const DEFAULT_OFFER_SECONDS = 600;
/** The longest an admin may make an offer live. */
export const MAX_OFFER_SECONDS = 7 * 24 * 3600;
const ACCESS_TOKEN_SECONDS = 300;
const NONCE_SECONDS = 300;
/**
 * Transaction codes compared for one offer, at most: each check is counted before the code is
 * compared, so no burst of requests on any number of instances gets more; the offer is locked for
 * good when the last one is wrong.
 */
export const MAX_TX_CODE_ATTEMPTS = 5;
const TX_CODE_LENGTH = 6;
const SIGNING_ALGS = ['ES256'];

const sha256 = (value: string): string => createHash('sha256').update(value).digest('base64url');
const random = (bytes: number): string => randomBytes(bytes).toString('base64url');

/**
 * The pre-authorized code of an offer, derived from its id one way: the served offer can carry it
 * while the database keeps neither in the clear (only the digests of both).
 */
const codeOf = (offerId: string): string => sha256(`openid4vci pre-authorized_code\u0000${offerId}`);

/** The transaction code's digest, salted with its offer's code digest. */
const txCodeDigest = (codeHash: string, txCode: string): string => sha256(`${codeHash}\u0000${txCode}`);

function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The credential id of an offer's credential: one offer, one credential, whoever asks twice. */
function credentialIdOf(offerHash: string): string {
  const h = createHash('sha256').update(`oid4vci credential\u0000${offerHash}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** did:jwk (W3C CCG did:jwk method): the holder, as the proof's key names it. */
const didJwk = (jwk: HolderBindingJwk): string =>
  `did:jwk:${Buffer.from(JSON.stringify(jwk)).toString('base64url')}`;

/**
 * The JWT checks the libraries call back into: ES256 over a public JWK only (our metadata's
 * `proof_signing_alg_values_supported` and `dpop_signing_alg_values_supported`).
 */
const verifyJwt: CallbackContext['verifyJwt'] = async (signer, jwt) => {
  if (signer.method !== 'jwk' || signer.alg !== 'ES256') return { verified: false };
  const jwk = signer.publicJwk;
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || 'd' in jwk) return { verified: false };
  const [header, payload, signature] = jwt.compact.split('.');
  try {
    const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }, format: 'jwk' });
    const ok = verify(
      'sha256',
      Buffer.from(`${header}.${payload}`),
      { key, dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature ?? '', 'base64url'),
    );
    return ok ? { verified: true, signerJwk: jwk } : { verified: false };
  } catch {
    return { verified: false };
  }
};

const callbacks: Omit<CallbackContext, 'decryptJwe' | 'encryptJwe'> = {
  hash: (data, alg) => {
    if (alg !== HashAlgorithm.Sha256) throw new Oauth2Error(`unsupported hash ${alg}`);
    return createHash('sha256').update(data).digest();
  },
  generateRandom: (bytes) => randomBytes(bytes),
  verifyJwt,
  // This door signs no JWT through the libraries: its tokens are opaque and its credentials are
  // the SD-JWT issuer's.
  signJwt: () => {
    throw new Oauth2Error('the OpenID4VCI door signs no JWT through the protocol library');
  },
  clientAuthentication: clientAuthenticationAnonymous(),
};

/** A library refusal as our protocol error (the library chose the code and the words). */
function protocolError(err: unknown, fallback: string): ProtocolError {
  if (err instanceof Oauth2ServerErrorResponseError) {
    return new ProtocolError(
      err.status === 401 ? 401 : 400,
      err.errorResponse.error,
      err.errorResponse.error_description ?? fallback,
    );
  }
  throw err;
}

export interface Oid4vciDoorDeps {
  issuerOrigin: string;
  schemas: SchemaRegistry;
  core: IssuanceCore;
  store: Oid4vciStore;
  hashEmail: EmailHasher;
  requireDpop: boolean;
  /** OID4VCI_DPOP_NONCE (RFC 9449 §8); `off` when not given. */
  dpopNonce?: DpopNonceMode;
  now?: () => Date;
}

/** A wallet endpoint's answer: its JSON body and the headers it carries (RFC 9449 §8: `DPoP-Nonce`). */
export interface ProtocolAnswer {
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** What an admin asks for (`POST /admin/credential-offers`), already shape-checked at the edge. */
export interface OfferRequest {
  schemaId: string;
  userId?: string | undefined;
  email?: string | undefined;
  claims?: Record<string, unknown> | undefined;
  txCode: boolean;
  expiresInSeconds: number;
  audit: AuditActor;
}

export interface CreatedOffer {
  offerId: string;
  credentialOffer: Record<string, unknown>;
  offerUri: string;
  txCode?: string;
  expiresAt: Date;
}

export class Oid4vciDoor {
  private readonly issuer = new Openid4vciIssuer({ callbacks });
  private readonly authorizationServer = new Oauth2AuthorizationServer({ callbacks });
  private readonly now: () => Date;
  private readonly metadataCache = new WeakMap<object, IssuerMetadataResult>();
  private readonly dpop: DpopVerifier;

  constructor(private readonly deps: Oid4vciDoorDeps) {
    this.now = deps.now ?? (() => new Date());
    this.dpop = new DpopVerifier({
      authorizationServer: this.authorizationServer,
      store: deps.store,
      nonce: deps.dpopNonce ?? 'off',
      signingAlgs: SIGNING_ALGS,
      now: this.now,
    });
    // The library refuses http URLs (its own metadata's included) unless told otherwise, and tells
    // it process-wide. Production requires an https ISSUER_ORIGIN (src/config/config.ts), so only
    // a development or test origin on http turns this on.
    if (new URL(deps.issuerOrigin).protocol === 'http:') setGlobalConfig({ allowInsecureUrls: true });
  }

  private get origin(): string {
    return this.deps.issuerOrigin;
  }

  /** Where each endpoint of the door answers (docs/interface.md "OpenID4VCI: the wallet door"). */
  get endpoints() {
    return {
      token: `${this.origin}/oid4vci/token`,
      nonce: `${this.origin}/oid4vci/nonce`,
      credential: `${this.origin}/oid4vci/credential`,
      offer: (offerId: string) => `${this.origin}/oid4vci/offers/${offerId}`,
    };
  }

  /** RFC 8414 authorization server metadata: the pre-authorized code grant and its token endpoint. */
  authorizationServerMetadata(): AuthorizationServerMetadata {
    return this.authorizationServer.createAuthorizationServerMetadata({
      issuer: this.origin,
      token_endpoint: this.endpoints.token,
      grant_types_supported: [preAuthorizedCodeGrantIdentifier],
      token_endpoint_auth_methods_supported: ['none'],
      'pre-authorized_grant_anonymous_access_supported': true,
      dpop_signing_alg_values_supported: SIGNING_ALGS,
    });
  }

  /** The schemas this door offers: every one issued as SD-JWT VC. */
  private offered(): LoadedSchema[] {
    return this.deps.schemas.all().filter((s) => this.deps.core.issues(s, 'SD_JWT_VC'));
  }

  /**
   * OpenID4VCI 1.0 §12.2 credential issuer metadata, one credential configuration per SD-JWT VC
   * schema (its id is the schema id), `display` and `claims` from the schema's type metadata.
   * Built once per schema set.
   */
  issuerMetadata(): IssuerMetadataResult {
    const set = this.deps.schemas.entries();
    const cached = this.metadataCache.get(set);
    if (cached) return cached;
    const configurations: CredentialConfigurationsSupported = {};
    for (const schema of this.offered()) configurations[schema.schemaId] = configurationOf(schema);
    const credentialIssuer: CredentialIssuerMetadata = this.issuer.createCredentialIssuerMetadata({
      credential_issuer: this.origin,
      credential_endpoint: this.endpoints.credential,
      nonce_endpoint: this.endpoints.nonce,
      credential_configurations_supported: configurations,
    });
    const result: IssuerMetadataResult = {
      originalDraftVersion: Openid4vciVersion.V1,
      credentialIssuer,
      authorizationServers: [this.authorizationServerMetadata()],
      knownCredentialConfigurations: this.issuer.getKnownCredentialConfigurationsSupported(credentialIssuer),
    };
    this.metadataCache.set(set, result);
    return result;
  }

  /**
   * A credential offer (OpenID4VCI 1.0 §4.1) by reference: the wallet fetches it from the offer
   * URL. The claims are checked now (the given ones against the schema, or the claims provider's
   * for `userId`), so an offer that cannot be redeemed is refused to the admin, not the wallet.
   */
  async createOffer(req: OfferRequest): Promise<CreatedOffer> {
    const schema = this.deps.schemas.require(req.schemaId);
    if (!this.deps.core.issues(schema, 'SD_JWT_VC'))
      throw invalidParameter('schemaId', `schema ${schema.schemaId} is not issued as SD_JWT_VC`);
    if (req.claims) this.deps.schemas.assertClaims(schema, req.claims);
    else {
      if (req.userId === undefined)
        throw invalidParameter('claims', 'required with email (no claims provider key)');
      await this.claimsFor(schema, req.userId);
    }
    const emailHash = req.email === undefined ? null : await this.deps.hashEmail(req.email);
    const offerId = random(32);
    const code = codeOf(offerId);
    const codeHash = sha256(code);
    const txCode = req.txCode ? randomDigits(TX_CODE_LENGTH) : undefined;
    const now = this.now();
    const expiresAt = new Date(now.getTime() + req.expiresInSeconds * 1000);
    await this.deps.store.createOffer({
      offerHash: sha256(offerId),
      codeHash,
      schemaId: schema.schemaId,
      configurationId: schema.schemaId,
      // An offer by email has no claims provider key: the email's keyed hash stands in for it.
      userId: req.userId ?? `email:${emailHash}`,
      emailHash,
      claims: req.claims ?? null,
      txCodeHash: txCode === undefined ? null : txCodeDigest(codeHash, txCode),
      expiresAt,
      createdBy: req.audit.actor,
      createdAt: now,
    });
    // Offers that nobody redeemed are dropped as new ones are made.
    await this.deps.store.prune(new Date(now.getTime() - 24 * 3600 * 1000));
    const { credentialOfferObject, credentialOffer } = await this.issuer.createCredentialOffer({
      issuerMetadata: this.issuerMetadata(),
      credentialConfigurationIds: [schema.schemaId],
      grants: { [preAuthorizedCodeGrantIdentifier]: this.grant(code, txCode !== undefined) },
      credentialOfferUri: this.endpoints.offer(offerId),
    });
    return {
      offerId,
      credentialOffer: credentialOfferObject,
      offerUri: credentialOffer,
      ...(txCode === undefined ? {} : { txCode }),
      expiresAt,
    };
  }

  private grant(code: string, withTxCode: boolean) {
    return {
      'pre-authorized_code': code,
      ...(withTxCode
        ? {
            tx_code: {
              input_mode: 'numeric' as const,
              length: TX_CODE_LENGTH,
              description: 'The code the issuer gave you with this offer',
            },
          }
        : {}),
    };
  }

  /** The offer object served at its `credential_offer_uri` (OpenID4VCI 1.0 §4.1.3). */
  async offerObject(offerId: string): Promise<Record<string, unknown>> {
    const offer = await this.deps.store.offerByHash(sha256(offerId));
    if (offer?.state !== 'offered' || offer.expiresAt <= this.now())
      throw new AppError('NOT_FOUND', 'no live credential offer with this id');
    return {
      credential_issuer: this.origin,
      credential_configuration_ids: [offer.configurationId],
      grants: { [preAuthorizedCodeGrantIdentifier]: this.grant(codeOf(offerId), offer.txCodeHash !== null) },
    };
  }

  /**
   * Token endpoint (OpenID4VCI 1.0 §6, RFC 6749 §5): the pre-authorized code, once, before its
   * offer expires, with the transaction code if the offer has one (at most MAX_TX_CODE_ATTEMPTS
   * compared); DPoP (RFC 9449) checked when sent, required with OID4VCI_REQUIRE_DPOP=1.
   */
  async token(request: RequestLike, body: Record<string, unknown>): Promise<ProtocolAnswer> {
    let parsed: ReturnType<Oauth2AuthorizationServer['parseAccessTokenRequest']>;
    try {
      parsed = this.authorizationServer.parseAccessTokenRequest({ request, accessTokenRequest: body });
    } catch (err) {
      throw protocolError(err, 'invalid token request');
    }
    const { grant } = parsed;
    if (grant.grantType !== preAuthorizedCodeGrantIdentifier)
      throw new ProtocolError(400, 'unsupported_grant_type', 'only the pre-authorized code grant is offered');
    const invalidGrant = (why: string) => new ProtocolError(400, 'invalid_grant', why);
    const offer = await this.deps.store.offerByCode(sha256(grant.preAuthorizedCode));
    const now = this.now();
    if (!offer) throw invalidGrant('unknown pre-authorized_code');
    if (offer.state === 'locked') throw invalidGrant('too many wrong tx_code values: the offer is locked');
    if (offer.state !== 'offered') throw invalidGrant('the pre-authorized_code was already used');
    if (offer.expiresAt <= now) throw invalidGrant('the pre-authorized_code has expired');
    // DPoP first: a proof refused (or sent back for a nonce) costs the offer no tx_code check.
    const dpopJwt = parsed.dpop?.jwt;
    if (this.deps.requireDpop && !dpopJwt)
      throw new ProtocolError(400, Oauth2ErrorCodes.InvalidDpopProof, 'a DPoP proof is required');
    const dpopJkt = dpopJwt ? await this.dpop.verify({ request, jwt: dpopJwt }) : null;
    try {
      await this.authorizationServer.verifyPreAuthorizedCodeAccessTokenRequest({
        authorizationServerMetadata: this.authorizationServerMetadata(),
        grant,
        accessTokenRequest: parsed.accessTokenRequest,
        request,
        expectedPreAuthorizedCode: grant.preAuthorizedCode,
        // The library checks the tx_code's presence and absence; its value is compared below.
        expectedTxCode: offer.txCodeHash === null ? undefined : (grant.txCode ?? '\u0000missing'),
        preAuthorizedCodeExpiresAt: offer.expiresAt,
        now,
      });
    } catch (err) {
      throw protocolError(err, 'invalid token request');
    }
    if (offer.txCodeHash !== null && grant.txCode !== undefined) {
      // Counted before it is compared, in one conditional update: concurrent guesses on any
      // number of instances share MAX_TX_CODE_ATTEMPTS checks.
      const check = await this.deps.store.takeTxCodeCheck(offer.offerHash, MAX_TX_CODE_ATTEMPTS, now);
      if (check === undefined) throw invalidGrant('no tx_code check is left: the offer is locked or used');
      if (!sameDigest(txCodeDigest(offer.codeHash, grant.txCode), offer.txCodeHash)) {
        if (check < MAX_TX_CODE_ATTEMPTS) throw invalidGrant('wrong tx_code');
        // A right code being checked concurrently loses to this lock: the offer is under attack.
        await this.deps.store.lockOffer(offer.offerHash);
        throw invalidGrant('wrong tx_code; the offer is now locked');
      }
    }
    const accessToken = random(32);
    const taken = await this.deps.store.exchangeCode(
      offer.offerHash,
      {
        tokenHash: sha256(accessToken),
        expiresAt: new Date(now.getTime() + ACCESS_TOKEN_SECONDS * 1000),
        dpopJkt,
      },
      now,
    );
    // Another request took the code (or locked the offer) in between.
    if (!taken) throw invalidGrant('the pre-authorized_code was already used');
    return {
      body: {
        access_token: accessToken,
        token_type: dpopJkt ? 'DPoP' : 'Bearer',
        expires_in: ACCESS_TOKEN_SECONDS,
      },
      headers: dpopJkt ? await this.dpop.answerHeaders() : {},
    };
  }

  /** Nonce endpoint (OpenID4VCI 1.0 §7): a fresh `c_nonce`, kept until a proof takes it. */
  async nonce(): Promise<Record<string, unknown>> {
    const cNonce = random(24);
    await this.deps.store.createNonce(cNonce, new Date(this.now().getTime() + NONCE_SECONDS * 1000));
    return this.issuer.createNonceResponse({ cNonce, cNonceExpiresIn: NONCE_SECONDS });
  }

  /**
   * Credential endpoint (OpenID4VCI 1.0 §8): the access token (and its DPoP proof when bound to
   * one), the offer's credential configuration, one `jwt` proof of possession (`aud` this issuer,
   * a nonce from the nonce endpoint) whose key becomes `cnf.jwk`. Signed, recorded (channel
   * `oid4vci`) and only then answered; any refusal issues nothing.
   */
  async credential(request: RequestLike, body: Record<string, unknown>): Promise<ProtocolAnswer> {
    const offer = await this.authorize(request);
    const metadata = this.issuerMetadata();
    const configurationId = body.credential_configuration_id;
    if (typeof configurationId === 'string' && !(configurationId in metadata.knownCredentialConfigurations))
      throw new ProtocolError(
        400,
        Oauth2ErrorCodes.UnknownCredentialConfiguration,
        `unknown credential_configuration_id ${configurationId}`,
      );
    let parsed: ReturnType<Openid4vciIssuer['parseCredentialRequest']>;
    try {
      parsed = this.issuer.parseCredentialRequest({ issuerMetadata: metadata, credentialRequest: body });
    } catch (err) {
      throw protocolError(err, 'invalid credential request');
    }
    if (parsed.credentialConfigurationId !== offer.configurationId)
      throw new ProtocolError(
        400,
        Oauth2ErrorCodes.InvalidCredentialRequest,
        `this access token is for credential_configuration_id ${offer.configurationId}`,
      );
    const jwts = parsed.proofs?.jwt;
    if (jwts?.length !== 1)
      throw new ProtocolError(400, Oauth2ErrorCodes.InvalidProof, 'exactly one proofs.jwt is required');
    const holderJwk = await this.verifyProof(jwts[0]!, metadata);

    const schema = this.deps.schemas.get(offer.schemaId);
    if (!schema || !this.deps.core.issues(schema, 'SD_JWT_VC'))
      throw new ProtocolError(
        400,
        Oauth2ErrorCodes.CredentialRequestDenied,
        'this credential is no longer issued',
      );
    const claims = offer.claims ?? (await this.claimsFor(schema, offer.userId).catch(denied));
    const now = this.now();
    const { record, credential } = await this.deps.core.untilRecorded('SD_JWT_VC', 'oid4vci', () =>
      this.deps.core.signForResponse({
        issuer: this.deps.core.requireIssuer(schema, 'SD_JWT_VC'),
        credentialId: credentialIdOf(offer.offerHash),
        channel: 'oid4vci',
        userId: offer.userId,
        holderDid: didJwk(holderJwk),
        schema,
        proofType: 'SD_JWT_VC',
        claims,
        expiresAt: new Date(now.getTime() + schema.expiresInSeconds * 1000),
        holderJwk,
        dedupe: false,
        emailHash: offer.emailHash ?? undefined,
        audit: { actor: offer.createdBy, reason: 'OpenID4VCI credential offer' },
      }),
    );
    await this.deps.store.markIssued(offer.offerHash, record.credentialId);
    if (credential === undefined)
      throw new ProtocolError(
        400,
        Oauth2ErrorCodes.InvalidCredentialRequest,
        'the credential of this offer was already issued',
      );
    return {
      body: this.issuer.createCredentialResponse({
        credentialRequest: parsed,
        credentials: [{ credential }],
      }),
      headers: {},
    };
  }

  /** RFC 6750 §2.1 / RFC 9449 §7: the offer an access token was given for. */
  private async authorize(request: RequestLike): Promise<Oid4vciOffer> {
    const header = request.headers.get('authorization') ?? '';
    const [scheme, token] = header.split(' ', 2);
    // The challenge carries only server-chosen text (oid4vci-dpop.ts `challengeHeader`); the body
    // may say more.
    const refuse = (
      error: ChallengeError,
      description: string,
      options: { challenge?: boolean; headers?: Record<string, string> } = {},
    ) =>
      new ProtocolError(
        401,
        error,
        description,
        challengeHeader({
          bearer: !this.deps.requireDpop,
          algs: SIGNING_ALGS,
          ...(options.challenge === false ? {} : { error }),
        }),
        options.headers,
      );
    if (!token || (scheme !== 'Bearer' && scheme !== 'DPoP'))
      throw refuse('invalid_token', 'an access token is required', { challenge: false });
    const offer = await this.deps.store.offerByToken(sha256(token));
    if (!offer || offer.tokenExpiresAt === null || offer.tokenExpiresAt <= this.now())
      throw refuse('invalid_token', 'unknown or expired access token');
    if (offer.state !== 'token')
      throw refuse('invalid_token', 'the credential of this access token was already issued');
    if (offer.dpopJkt === null) {
      if (scheme === 'DPoP') throw refuse('invalid_token', 'this access token is not DPoP-bound');
      return offer;
    }
    if (scheme !== 'DPoP')
      throw refuse('invalid_token', 'this access token is DPoP-bound: use the DPoP scheme');
    const dpopJwt = request.headers.get('dpop');
    if (!dpopJwt) throw refuse('invalid_dpop_proof', 'a DPoP proof is required', { challenge: false });
    try {
      await this.dpop.verify({
        request,
        jwt: dpopJwt,
        accessToken: token,
        expectedJwkThumbprint: offer.dpopJkt,
      });
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      const error: ChallengeError = err.error === 'use_dpop_nonce' ? 'use_dpop_nonce' : 'invalid_dpop_proof';
      throw refuse(error, err.description, { headers: err.headers ?? {} });
    }
    return offer;
  }

  /**
   * The proof of possession (OpenID4VCI 1.0 §8.2.1.1): its nonce taken once (unknown, used or
   * expired: `invalid_nonce`), then typ, aud, signature by the library; its key a public EC or
   * OKP key by the same rules as the hosted door's `signingKey`.
   */
  private async verifyProof(jwt: string, metadata: IssuerMetadataResult): Promise<HolderBindingJwk> {
    let nonce: unknown;
    try {
      nonce = decodeJwt({ jwt }).payload.nonce;
    } catch {
      throw new ProtocolError(400, Oauth2ErrorCodes.InvalidProof, 'the proof is not a JWT');
    }
    const expiresAt = typeof nonce === 'string' ? await this.deps.store.takeNonce(nonce) : undefined;
    if (!expiresAt || expiresAt <= this.now())
      throw new ProtocolError(
        400,
        Oauth2ErrorCodes.InvalidNonce,
        'the proof needs a fresh c_nonce from the nonce endpoint',
      );
    let verified: Awaited<ReturnType<Openid4vciIssuer['verifyCredentialRequestJwtProof']>>;
    try {
      verified = await this.issuer.verifyCredentialRequestJwtProof({
        issuerMetadata: metadata,
        jwt,
        expectedNonce: nonce as string,
        nonceExpiresAt: expiresAt,
        now: this.now(),
      });
    } catch (err) {
      throw protocolError(err, 'invalid proof');
    }
    if (!iatIsFresh(verified.payload.iat, this.now()))
      throw new ProtocolError(
        400,
        Oauth2ErrorCodes.InvalidProof,
        `the proof's iat is more than ${PROOF_IAT_WINDOW_SECONDS} s from the server's time`,
      );
    const jwk: Jwk | undefined = verified.header.jwk;
    if (!jwk || verified.signer.method !== 'jwk')
      throw new ProtocolError(
        400,
        Oauth2ErrorCodes.InvalidProof,
        'the proof must carry its key as a jwk header',
      );
    const shape = HolderBindingJwkSchema.safeParse(jwk);
    if (!shape.success)
      throw new ProtocolError(
        400,
        Oauth2ErrorCodes.InvalidProof,
        `the proof's jwk is not a public holder key (${shape.error.issues[0]?.message ?? 'invalid'})`,
      );
    try {
      return assertPublicKey(shape.data, 'proof.jwk');
    } catch (err) {
      throw new ProtocolError(400, Oauth2ErrorCodes.InvalidProof, (err as Error).message);
    }
  }

  /** The claims provider's claims for `userId`, checked against the schema (404 when it has none). */
  private async claimsFor(schema: LoadedSchema, userId: string): Promise<Record<string, unknown>> {
    const answer = await this.deps.core.lookupClaims(schema, userId, 'SD_JWT_VC');
    if (!answer.eligible)
      throw new AppError(
        'NOT_FOUND',
        `userId: the claims provider has no ${schema.schemaId} credential for this user`,
        {
          field: 'userId',
        },
      );
    const { id: _id, ...claims } = answer.credentialSubject;
    this.deps.schemas.assertClaims(schema, claims);
    return claims;
  }
}

/** A claims lookup that fails at redemption: the wallet is refused, not told why. */
function denied(err: unknown): never {
  if (err instanceof AppError && err.status < 500)
    throw new ProtocolError(
      400,
      Oauth2ErrorCodes.CredentialRequestDenied,
      'the issuer has no such credential for this offer any more',
    );
  throw err;
}

function randomDigits(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomBytes(1)[0]!;
    // Rejection sampling: 250 is the largest multiple of 10 below 256.
    if (byte < 250) out += String(byte % 10);
  }
  return out;
}

/** One credential configuration (OpenID4VCI 1.0 Appendix A.3.2) from a schema and its type metadata. */
function configurationOf(schema: LoadedSchema): CredentialConfigurationsSupported[string] {
  const title = schema.title ?? schema.schemaId;
  const display = (
    schema.sdJwt.display ?? [
      { locale: 'en', name: title, ...(schema.description ? { description: schema.description } : {}) },
    ]
  ).map((d) => ({
    name: d.name,
    locale: d.locale,
    ...(d.description ? { description: d.description } : {}),
    ...(d.rendering?.simple?.logo ? { logo: d.rendering.simple.logo } : {}),
    ...(d.rendering?.simple?.background_color
      ? { background_color: d.rendering.simple.background_color }
      : {}),
    ...(d.rendering?.simple?.text_color ? { text_color: d.rendering.simple.text_color } : {}),
  }));
  const locale = display[0]!.locale;
  const properties = (schema.credentialSubject.properties ?? {}) as Record<string, { title?: unknown }>;
  const required = new Set(
    Array.isArray(schema.credentialSubject.required) ? (schema.credentialSubject.required as string[]) : [],
  );
  return {
    format: 'dc+sd-jwt',
    vct: schema.sdJwt.vct,
    scope: schema.schemaId,
    cryptographic_binding_methods_supported: ['jwk'],
    credential_signing_alg_values_supported: SIGNING_ALGS,
    proof_types_supported: { jwt: { proof_signing_alg_values_supported: SIGNING_ALGS } },
    credential_metadata: {
      display,
      claims: Object.entries(properties).map(([name, p]) => ({
        path: [name],
        mandatory: required.has(name),
        display: [{ name: typeof p.title === 'string' ? p.title : name, locale }],
      })),
    },
  } as CredentialConfigurationsSupported[string];
}
