/** A signing or partner key as kept in the database: the private part sealed (src/keys/sealed-key.ts). */
export interface StoredKey {
  kid: string;
  purpose: 'credential-signing' | 'partner-jwt';
  createdAt: Date;
  retiredAt: Date | null;
  sealed: string;
  /** Prepared by `keys prepare`: published, not signing, promoted by the next rotation. */
  standby: boolean;
  /** The certificate chain (RFC 7517 §4.7 `x5c`: base64 DER, leaf first), when one is attached. */
  x5c: string[] | null;
}

/** The Iden3 BabyJubJub key as kept in the database: one row, its content sealed. */
export interface StoredIden3Key {
  /** Compressed public key, hex: the row's kid in the sealing's additional data. */
  publicKey: string;
  createdAt: Date;
  sealed: string;
}

/** Any sealed row, as `keys reseal` sees it (`purpose` `iden3-bjj` for the Iden3 key). */
export interface SealedRow {
  kid: string;
  purpose: string;
  sealed: string;
}

/**
 * Keys shared by several instances (PostgreSQL). Every change bumps `version`, which instances
 * poll (one cheap read) to reload their key ring.
 */
export interface KeyMaterialStore {
  version(): Promise<number>;
  list(): Promise<StoredKey[]>;
  /** Stores `keys` when no key is stored yet (the first start imports KEYS_DIR); false otherwise. */
  importIfEmpty(keys: StoredKey[]): Promise<boolean>;
  /**
   * One transaction: retires the active key of `created.purpose` at `at`, adds `created`, and
   * writes the `key.rotated` event (docs/operations.md "Webhooks") while an endpoint exists.
   */
  rotate(created: StoredKey, at: Date): Promise<{ retired: string[] }>;
  /**
   * One transaction: when standby keys of `purpose` exist, `choose` picks the one that signs
   * from now on (given them newest first; throwing refuses the rotation and nothing changes),
   * the active key is retired at `at` and the chosen one signs, with its `key.rotated` event.
   * Undefined when there is none.
   */
  promoteStandby(
    purpose: StoredKey['purpose'],
    at: Date,
    choose: (standby: StoredKey[]) => Promise<string>,
  ): Promise<{ promoted: string; retired: string[] } | undefined>;
  /** Adds a standby key (`keys prepare`), published at once, signing after the next rotation. */
  addStandby(key: StoredKey): Promise<void>;
  /**
   * Sets the chain of the credential-signing key `kid` (`keys certificate`) once `check`, given
   * the row under the lock, accepts it (throwing leaves the row as it was); false when there is
   * no such key.
   */
  attachChain(kid: string, x5c: string[], check: (key: StoredKey) => Promise<void>): Promise<boolean>;
  iden3Key(): Promise<StoredIden3Key | undefined>;
  /** Stores `key` unless a key is stored (instances starting together agree); returns the stored one. */
  putIden3KeyIfAbsent(key: StoredIden3Key): Promise<StoredIden3Key>;
  /**
   * One transaction: every sealed row (signing, partner and Iden3 keys) gets `reseal(row)`'s text;
   * when `reseal` throws, no row changes. Answers the rows, each with whether its text changed.
   */
  resealAll(reseal: (row: SealedRow) => string): Promise<Array<SealedRow & { changed: boolean }>>;
}
