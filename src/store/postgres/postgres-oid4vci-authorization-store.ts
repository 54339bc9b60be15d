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
import type { PgPool } from './database.js';

/**
 * Authorization requests of migration 029 (docs/interface.md "OpenID4VCI: the wallet door"). Each
 * change of state is one conditional UPDATE: of two instances racing, one row changes.
 */
export class PostgresOid4vciAuthorizationStore implements Oid4vciAuthorizationStore {
  constructor(private readonly pool: PgPool) {}

  private async row(sql: string, values: unknown[]): Promise<Oid4vciAuthorization | undefined> {
    const { rows } = await this.pool.query<Oid4vciAuthorizationRow>(sql, values);
    return rows[0] && authorizationFromRow(rows[0]);
  }

  async createAuthorization(authorization: NewOid4vciAuthorization): Promise<void> {
    await this.pool.query(
      `INSERT INTO oid4vci_authorizations (${INSERT_AUTHORIZATION_COLUMNS})
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      newAuthorizationValues(authorization),
    );
  }

  startLogin(
    requestHash: string,
    clientId: string,
    login: Oid4vciLoginStart,
    now: Date,
  ): Promise<Oid4vciAuthorization | undefined> {
    return this.row(
      `UPDATE oid4vci_authorizations SET state = 'login', login_hash = $1, login_verifier = $2, expires_at = $3
       WHERE request_hash = $4 AND client_id = $5 AND state = 'pushed' AND expires_at > $6 RETURNING *`,
      startLoginValues(requestHash, clientId, login, now),
    );
  }

  authorizationByLogin(loginHash: string, now: Date): Promise<Oid4vciAuthorization | undefined> {
    return this.row(
      `SELECT * FROM oid4vci_authorizations WHERE login_hash = $1 AND state = 'login' AND expires_at > $2`,
      [loginHash, now.getTime()],
    );
  }

  async issueCode(loginHash: string, code: Oid4vciCodeIssue, now: Date): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE oid4vci_authorizations SET state = 'code', user_id = $1, code_hash = $2, expires_at = $3
       WHERE login_hash = $4 AND state = 'login' AND expires_at > $5`,
      issueCodeValues(loginHash, code, now),
    );
    return rowCount === 1;
  }

  async refuseLogin(loginHash: string): Promise<void> {
    await this.pool.query(
      `UPDATE oid4vci_authorizations SET state = 'refused' WHERE login_hash = $1 AND state = 'login'`,
      [loginHash],
    );
  }

  takeCode(codeHash: string, now: Date): Promise<Oid4vciAuthorization | undefined> {
    return this.row(
      `UPDATE oid4vci_authorizations SET state = 'token'
       WHERE code_hash = $1 AND state = 'code' AND expires_at > $2 RETURNING *`,
      [codeHash, now.getTime()],
    );
  }

  async setTokens(requestHash: string, tokens: Oid4vciTokens): Promise<void> {
    await this.pool.query(
      `UPDATE oid4vci_authorizations SET expires_at = $1, dpop_jkt = $2, refresh_hash = $3, refresh_expires_at = $4
       WHERE request_hash = $5`,
      setTokensValues(requestHash, tokens),
    );
  }

  rotateRefresh(
    refreshHash: string,
    dpopJkt: string,
    next: Oid4vciRefreshRotation,
    now: Date,
  ): Promise<Oid4vciAuthorization | undefined> {
    return this.row(
      `UPDATE oid4vci_authorizations SET refresh_hash = $1, refresh_expires_at = $2, expires_at = $3
       WHERE refresh_hash = $4 AND dpop_jkt = $5 AND state = 'token' AND refresh_expires_at > $6 RETURNING *`,
      rotateRefreshValues(refreshHash, dpopJkt, next, now),
    );
  }

  async prune(before: Date): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM oid4vci_authorizations
       WHERE expires_at < $1 AND (refresh_expires_at IS NULL OR refresh_expires_at < $1)`,
      [before.getTime()],
    );
    return rowCount ?? 0;
  }
}
