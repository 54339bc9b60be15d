import {
  authorizationFromRow,
  INSERT_AUTHORIZATION_COLUMNS,
  issueCodeValues,
  type NewOid4vciAuthorization,
  newAuthorizationValues,
  type Oid4vciAuthorization,
  type Oid4vciAuthorizationRow,
  type Oid4vciAuthorizationStore,
  type Oid4vciCodeIssue,
  type Oid4vciLoginStart,
  type Oid4vciRefreshRotation,
  type Oid4vciTokens,
  rotateRefreshValues,
  setTokensValues,
  startLoginValues,
} from '../oid4vci-authorization-store.js';
import type { SqliteDatabase } from './database.js';

/** Authorization requests of migration 024 (docs/interface.md "OpenID4VCI: the wallet door"). */
export class SqliteOid4vciAuthorizationStore implements Oid4vciAuthorizationStore {
  private readonly stmts;

  constructor(db: SqliteDatabase) {
    type Row = Oid4vciAuthorizationRow;
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO oid4vci_authorizations (${INSERT_AUTHORIZATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      startLogin: db.prepare<[string, string, number, string, string, number], Row>(
        `UPDATE oid4vci_authorizations SET state = 'login', login_hash = ?, login_verifier = ?, expires_at = ?
         WHERE request_hash = ? AND client_id = ? AND state = 'pushed' AND expires_at > ? RETURNING *`,
      ),
      byLogin: db.prepare<[string, number], Row>(
        `SELECT * FROM oid4vci_authorizations WHERE login_hash = ? AND state = 'login' AND expires_at > ?`,
      ),
      issueCode: db.prepare(
        `UPDATE oid4vci_authorizations SET state = 'code', user_id = ?, code_hash = ?, expires_at = ?
         WHERE login_hash = ? AND state = 'login' AND expires_at > ?`,
      ),
      refuse: db.prepare(
        `UPDATE oid4vci_authorizations SET state = 'refused' WHERE login_hash = ? AND state = 'login'`,
      ),
      takeCode: db.prepare<[string, number], Row>(
        `UPDATE oid4vci_authorizations SET state = 'token'
         WHERE code_hash = ? AND state = 'code' AND expires_at > ? RETURNING *`,
      ),
      setTokens: db.prepare(
        `UPDATE oid4vci_authorizations SET expires_at = ?, dpop_jkt = ?, refresh_hash = ?, refresh_expires_at = ?
         WHERE request_hash = ?`,
      ),
      rotate: db.prepare<[string, number, number, string, string, number], Row>(
        `UPDATE oid4vci_authorizations SET refresh_hash = ?, refresh_expires_at = ?, expires_at = ?
         WHERE refresh_hash = ? AND dpop_jkt = ? AND state = 'token' AND refresh_expires_at > ? RETURNING *`,
      ),
      prune: db.prepare(
        `DELETE FROM oid4vci_authorizations
         WHERE expires_at < ? AND (refresh_expires_at IS NULL OR refresh_expires_at < ?)`,
      ),
    };
  }

  async createAuthorization(authorization: NewOid4vciAuthorization): Promise<void> {
    this.stmts.insert.run(...newAuthorizationValues(authorization));
  }

  async startLogin(
    requestHash: string,
    clientId: string,
    login: Oid4vciLoginStart,
    now: Date,
  ): Promise<Oid4vciAuthorization | undefined> {
    const row = this.stmts.startLogin.get(...startLoginValues(requestHash, clientId, login, now));
    return row && authorizationFromRow(row);
  }

  async authorizationByLogin(loginHash: string, now: Date): Promise<Oid4vciAuthorization | undefined> {
    const row = this.stmts.byLogin.get(loginHash, now.getTime());
    return row && authorizationFromRow(row);
  }

  async issueCode(loginHash: string, code: Oid4vciCodeIssue, now: Date): Promise<boolean> {
    return this.stmts.issueCode.run(...issueCodeValues(loginHash, code, now)).changes === 1;
  }

  async refuseLogin(loginHash: string): Promise<void> {
    this.stmts.refuse.run(loginHash);
  }

  async takeCode(codeHash: string, now: Date): Promise<Oid4vciAuthorization | undefined> {
    const row = this.stmts.takeCode.get(codeHash, now.getTime());
    return row && authorizationFromRow(row);
  }

  async setTokens(requestHash: string, tokens: Oid4vciTokens): Promise<void> {
    this.stmts.setTokens.run(...setTokensValues(requestHash, tokens));
  }

  async rotateRefresh(
    refreshHash: string,
    dpopJkt: string,
    next: Oid4vciRefreshRotation,
    now: Date,
  ): Promise<Oid4vciAuthorization | undefined> {
    const row = this.stmts.rotate.get(...rotateRefreshValues(refreshHash, dpopJkt, next, now));
    return row && authorizationFromRow(row);
  }

  async prune(before: Date): Promise<number> {
    return this.stmts.prune.run(before.getTime(), before.getTime()).changes;
  }
}
