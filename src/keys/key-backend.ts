import type { KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import type { KeyBackendConfig } from '../config/key-backend-config.js';
import type { KeyData, KeyPurpose } from './key-data.js';

/**
 * Where a key's private half lives and how it signs
 * (docs/security.md "Keys in a hardware security module"). The key's state (purpose, active,
 * retired, standby, chain) is kept the same way for every backend: a file in KEYS_DIR on SQLite,
 * a database row on PostgreSQL. A backend only says what is stored beside that state and how to
 * sign with it, so a new one is one file beside this one plus its line in
 * src/keys/open-key-backend.ts.
 */
export interface KeyBackend {
  /** KEY_BACKEND's value; `token.backend` in the stored key names it. */
  readonly name: KeyBackendName;
  /** A new ES256 key held by this backend: its RFC 7638 kid and what is stored for it. */
  generate(purpose: KeyPurpose): Promise<{ kid: string; custody: KeyCustody }>;
  /** A stored key's signer; a KeyError naming `where` when this backend does not hold it. */
  open(data: KeyData, where: string): Promise<HeldKey>;
  /**
   * Resolves when the backend signs now (a test signature with `kid`); rejects with an
   * `UNAVAILABLE` AppError naming the backend otherwise. `/readyz` and doctor ask it.
   */
  probe(kid: HeldKey): Promise<void>;
  close(): Promise<void>;
}

export type KeyBackendName = KeyBackendConfig['kind'];

/**
 * What a stored key holds for its backend: the private JWK (software), or the public JWK and the
 * reference the backend finds its private half by (`token.backend` names the backend).
 */
export type KeyCustody =
  | { privateJwk: NonNullable<KeyData['privateJwk']> }
  | { publicJwk: NonNullable<KeyData['publicJwk']>; token: NonNullable<KeyData['token']> };

/** Signs `data` with the key's algorithm; the result is the JWS signature (RFC 7518 §3.4 for ES256: r||s). */
export type Sign = (data: Uint8Array) => Promise<Buffer>;

export interface HeldKey {
  /** The public key as a JWK, without kid/alg/use. */
  publicJwk: JWK;
  publicKey: KeyObject;
  sign: Sign;
  /** Only a software key has one: the private key (a database import or a token import reads it). */
  privateKey: KeyObject | undefined;
  /** Which backend holds it. */
  custody: KeyBackendName;
}
