/**
 * An authorization request of the OpenID4VCI channel's authorization code flow as stored
 * (src/oid4vci/par.ts, authorize.ts, login.ts, code-token.ts). Secrets are kept only as SHA-256
 * digests: the request_uri, the sign-in's state, the authorization code, the refresh token.
 */
export interface Oid4vciAuthorization {
  requestHash: string;
  clientId: string;
  redirectUri: string;
  /** RFC 7636: the S256 code challenge. */
  codeChallenge: string;
  /** The wallet's `state`, handed back with the code. */
  walletState: string | null;
  configurationId: string;
  /** The `authorization_details` asked for (RFC 9396), answered again with the token. */
  details: Array<Record<string, unknown>> | null;
  /** The offer whose id the wallet carried as `issuer_state`; null: the wallet started on its own. */
  offerHash: string | null;
  /** RFC 9449 §10: the DPoP key the authorization code is bound to, then its tokens (§5). */
  dpopJkt: string | null;
  /** `pushed` → `login` → `code` → `token`; `refused` when the sign-in failed. */
  state: 'pushed' | 'login' | 'code' | 'token' | 'refused';
  /** When the current step runs out: the request_uri, the sign-in, the code, the access token. */
  expiresAt: Date;
  /** The claims provider's user id the sign-in named. */
  userId: string | null;
  /** RFC 7636: the verifier of the issuer's own sign-in at the login provider. */
  loginVerifier: string | null;
  refreshExpiresAt: Date | null;
  createdAt: Date;
}

export type NewOid4vciAuthorization = Omit<
  Oid4vciAuthorization,
  'state' | 'userId' | 'refreshExpiresAt' | 'loginVerifier'
>;

/** The sign-in `startLogin` records: its state's digest, its PKCE verifier, when it runs out. */
export interface Oid4vciLoginStart {
  loginHash: string;
  verifier: string;
  expiresAt: Date;
}

/** The code `issueCode` records for the signed-in user. */
export interface Oid4vciCodeIssue {
  userId: string;
  codeHash: string;
  expiresAt: Date;
}

/** What `setTokens` records for the token step. */
export interface Oid4vciTokens {
  expiresAt: Date;
  dpopJkt: string | null;
  refreshHash: string | null;
  refreshExpiresAt: Date | null;
}

/** The next refresh token `rotateRefresh` puts in place of the one used. */
export interface Oid4vciRefreshRotation {
  refreshHash: string;
  refreshExpiresAt: Date;
  expiresAt: Date;
}

/**
 * Authorization requests, sign-ins, codes and refresh tokens of the OpenID4VCI channel, in the
 * database so that any instance serves any step. Each change of state is one conditional write:
 * a request_uri, a sign-in, a code and a refresh token are each taken once.
 */
export interface Oid4vciAuthorizationStore {
  createAuthorization(authorization: NewOid4vciAuthorization): Promise<void>;
  /**
   * `pushed` → `login` for `clientId`'s live request: the sign-in's state digest recorded, the
   * step now running until `expiresAt`. Undefined: unknown, another client's, used or expired.
   */
  startLogin(
    requestHash: string,
    clientId: string,
    login: Oid4vciLoginStart,
    now: Date,
  ): Promise<Oid4vciAuthorization | undefined>;
  /** The authorization waiting for the sign-in with this state digest, live at `now`. */
  authorizationByLogin(loginHash: string, now: Date): Promise<Oid4vciAuthorization | undefined>;
  /** `login` → `code`: the signed-in user and the code's digest; false if the sign-in was taken. */
  issueCode(loginHash: string, code: Oid4vciCodeIssue, now: Date): Promise<boolean>;
  /** `login` → `refused`: the sign-in failed; its state is good for nothing more. */
  refuseLogin(loginHash: string): Promise<void>;
  /** `code` → `token`, once, if the code is live at `now`: the authorization it was issued for. */
  takeCode(codeHash: string, now: Date): Promise<Oid4vciAuthorization | undefined>;
  /** The token step's expiry, the DPoP key of its tokens and its refresh token (or none). */
  setTokens(requestHash: string, tokens: Oid4vciTokens): Promise<void>;
  /**
   * A refresh token used by the holder of its DPoP key `dpopJkt`: its digest replaced by the next
   * one's, once, if it is live at `now`. Undefined: unknown, used, expired or another key's.
   */
  rotateRefresh(
    refreshHash: string,
    dpopJkt: string,
    next: Oid4vciRefreshRotation,
    now: Date,
  ): Promise<Oid4vciAuthorization | undefined>;
  /** Drops authorizations whose step and refresh token both ran out before `before`. */
  prune(before: Date): Promise<number>;
}

/** The `oid4vci_authorizations` columns as both engines return them (times in epoch ms). */
export interface Oid4vciAuthorizationRow {
  request_hash: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  wallet_state: string | null;
  configuration_id: string;
  details: string | null;
  offer_hash: string | null;
  dpop_jkt: string | null;
  state: Oid4vciAuthorization['state'];
  expires_at: number | string;
  user_id: string | null;
  login_verifier: string | null;
  refresh_expires_at: number | string | null;
  created_at: number | string;
}

/** A row as the store's record (pg hands a BIGINT back as a string). */
export function authorizationFromRow(r: Oid4vciAuthorizationRow): Oid4vciAuthorization {
  return {
    requestHash: r.request_hash,
    clientId: r.client_id,
    redirectUri: r.redirect_uri,
    codeChallenge: r.code_challenge,
    walletState: r.wallet_state,
    configurationId: r.configuration_id,
    details: r.details === null ? null : (JSON.parse(r.details) as Array<Record<string, unknown>>),
    offerHash: r.offer_hash,
    dpopJkt: r.dpop_jkt,
    state: r.state,
    expiresAt: new Date(Number(r.expires_at)),
    userId: r.user_id,
    loginVerifier: r.login_verifier,
    refreshExpiresAt: r.refresh_expires_at === null ? null : new Date(Number(r.refresh_expires_at)),
    createdAt: new Date(Number(r.created_at)),
  };
}

export const INSERT_AUTHORIZATION_COLUMNS =
  'request_hash, client_id, redirect_uri, code_challenge, wallet_state, configuration_id, details, offer_hash, dpop_jkt, state, expires_at, created_at';

/** The values of a new authorization, in the column order of `INSERT_AUTHORIZATION_COLUMNS`. */
export function newAuthorizationValues(a: NewOid4vciAuthorization): Array<string | number | null> {
  return [
    a.requestHash,
    a.clientId,
    a.redirectUri,
    a.codeChallenge,
    a.walletState,
    a.configurationId,
    a.details === null ? null : JSON.stringify(a.details),
    a.offerHash,
    a.dpopJkt,
    'pushed',
    a.expiresAt.getTime(),
    a.createdAt.getTime(),
  ];
}

/**
 * The values of `startLogin`'s UPDATE, in the engines' order: login_hash, login_verifier,
 * expires_at, then the request_hash, client_id and time it is matched by.
 */
export function startLoginValues(
  requestHash: string,
  clientId: string,
  login: Oid4vciLoginStart,
  now: Date,
): [string, string, number, string, string, number] {
  return [login.loginHash, login.verifier, login.expiresAt.getTime(), requestHash, clientId, now.getTime()];
}

/** The values of `issueCode`'s UPDATE: user_id, code_hash, expires_at, then the login_hash and time it is matched by. */
export function issueCodeValues(
  loginHash: string,
  code: Oid4vciCodeIssue,
  now: Date,
): [string, string, number, string, number] {
  return [code.userId, code.codeHash, code.expiresAt.getTime(), loginHash, now.getTime()];
}

/** The values of `setTokens`' UPDATE: expires_at, dpop_jkt, refresh_hash, refresh_expires_at, request_hash. */
export function setTokensValues(
  requestHash: string,
  tokens: Oid4vciTokens,
): [number, string | null, string | null, number | null, string] {
  return [
    tokens.expiresAt.getTime(),
    tokens.dpopJkt,
    tokens.refreshHash,
    tokens.refreshExpiresAt?.getTime() ?? null,
    requestHash,
  ];
}

/**
 * The values of `rotateRefresh`'s UPDATE: the next refresh_hash, refresh_expires_at and
 * expires_at, then the refresh_hash, dpop_jkt and time it is matched by.
 */
export function rotateRefreshValues(
  refreshHash: string,
  dpopJkt: string,
  next: Oid4vciRefreshRotation,
  now: Date,
): [string, number, number, string, string, number] {
  return [
    next.refreshHash,
    next.refreshExpiresAt.getTime(),
    next.expiresAt.getTime(),
    refreshHash,
    dpopJkt,
    now.getTime(),
  ];
}
