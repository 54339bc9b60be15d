import type {
  AuditAction,
  AuditActor,
  Channel,
  CredentialStatus,
  Envelope,
  ProofType,
  StatusChange,
  StatusSlot,
  UploadState,
} from '../model.js';
import type { CompromisedKeyStore } from './compromised-key-store.js';
import type { RenewalLinks, RenewalStore } from './renewal-store.js';
import type { StatusJobStore } from './status-job-store.js';
import type { NewWebhookEvent, WebhookStore } from './webhook-store.js';

export type {
  AuditAction,
  AuditActor,
  Channel,
  CredentialStatus,
  RenewalLinks,
  StatusChange,
  StatusSlot,
  UploadState,
};

/**
 * Storage interfaces. Async so that a networked engine (PostgreSQL) can implement them;
 * `sqlite/` is the embedded default. A new engine is one folder implementing `Store` and
 * `StorageEngine` (src/store/engine.ts), listed in src/store/engines.ts.
 */

/**
 * The stored body of `POST {v1}/dstorage/vcs` (docs/interface.md): the sealed envelope plus the metadata the
 * hosting service files it under; never the plaintext.
 */
export interface UploadBody extends Envelope {
  holderDid: string;
  schemaId: string;
  expiresAt: string;
  externalId: string;
}

export interface NewIssuance {
  credentialId: string;
  channel: Channel;
  userId: string;
  holderDid: string;
  schemaId: string;
  proofType: ProofType;
  revocationNonce: number;
  statusSlot: StatusSlot | null;
  /**
   * Hash of the claims and the holder's keys (`cnf` and the encryption key;
   * src/issuance/issuance-core.ts `issuanceSubjectHash`): with the holder DID, schema and proof
   * type, what makes a hosted repeat the same issuance.
   */
  subjectHash: string;
  kid: string;
  createdAt: Date;
  expiresAt: Date;
  /**
   * What the outbox uploads; null for an oid4vci credential, which goes to the wallet in the
   * credential response (recorded with upload_state `none`, never pending).
   */
  envelope: UploadBody | null;
  /**
   * When the background worker may first take the upload (default: at once). The request that
   * records an issuance uploads it itself first, so it leaves the worker out until then: the
   * insert also holds the upload's lease until then (no separate lease write; see `leaseUpload`).
   */
  uploadDueAt?: Date | undefined;
  /**
   * A direct issuance's keyed hash of its recipient's normalised email (src/issuance/email-hash.ts),
   * the admin history's `email` filter; never the address. Written only, never read back.
   */
  emailHash?: string | undefined;
  /** The batch-issue run it belongs to (a bulk status change's `batchId` selector); read by `history.batchOf`. */
  batchId?: string | undefined;
  /** The credential this one renews. Written only. */
  renewedFrom?: string | undefined;
  /** Its `credential.issued` webhook event, written with it while an endpoint exists. */
  event?: NewWebhookEvent | undefined;
}

export interface IssuanceRecord
  extends Omit<NewIssuance, 'emailHash' | 'event' | 'envelope' | 'batchId' | 'renewedFrom'> {
  /**
   * The envelope to upload, kept until the hosting service has stored it (docs/architecture.md
   * "Envelopes until delivered"): set while the upload is pending or failed, null once uploaded,
   * and null for an oid4vci credential (nothing to upload).
   */
  envelope: UploadBody | null;
  /**
   * SHA-256 (hex) of the envelope's ciphertext (the decoded `data`), recorded with the issuance and
   * kept for good: what the hosting service's copy is matched against once the envelope is gone.
   * Null for an oid4vci credential, and for a record made before the envelopes had a table of
   * their own (its digest, if any, is in the retired `envelope` column).
   */
  envelopeSha256: string | null;
  status: CredentialStatus;
  revokedAt: Date | null;
  suspendedAt: Date | null;
  uploadState: UploadState;
  uploadAttempts: number;
  nextAttemptAt: Date | null;
  lastError: string | null;
  storagePath: string | null;
  uploadedAt: Date | null;
}

export type InsertOutcome =
  | { kind: 'inserted'; record: IssuanceRecord }
  /** The same credential id recorded before, or a live (not revoked, not expired) hosted issuance with the same holder, schema, proof type and subject hash. */
  | { kind: 'duplicate'; record: IssuanceRecord }
  /** The proposed status slot or partition was taken meanwhile: propose again and re-sign. */
  | { kind: 'slot-taken' }
  | { kind: 'nonce-taken' };

export interface IssuanceStore {
  /** A random free slot of the open partition (opening the next one when full). Not reserved. */
  proposeStatusSlot(partitionSize: number, bits: 1 | 2): Promise<StatusSlot>;
  /** Whether a revocation nonce is already used. */
  nonceInUse(nonce: number): Promise<boolean>;
  findLiveDuplicate(q: {
    holderDid: string;
    schemaId: string;
    proofType: ProofType;
    subjectHash: string;
    now: Date;
  }): Promise<IssuanceRecord | undefined>;
  /**
   * One transaction: duplicate check, slot check, insert (with its envelope, kept until
   * `markUploaded`). With `audit`, an `issue` audit row (target: the credential id) commits with it.
   */
  insertIssuance(
    issuance: NewIssuance,
    options: { dedupe: boolean; audit?: AuditActor | undefined },
  ): Promise<InsertOutcome>;
  get(credentialId: string): Promise<IssuanceRecord | undefined>;
  getByNonce(nonce: number): Promise<IssuanceRecord | undefined>;

  /** Latest expiry among credentials signed with `kid` (retired keys stay published until then). */
  latestExpiryForKid(kid: string): Promise<Date | undefined>;

  /** Outbox: takes a lease on up to `limit` due uploads. */
  leaseDueUploads(now: Date, leaseMs: number, limit: number): Promise<IssuanceRecord[]>;
  /** Outbox: takes the lease on one pending upload; false when another worker holds it or it is done. */
  leaseUpload(credentialId: string, now: Date, leaseMs: number): Promise<boolean>;
  /**
   * The hosting service stored it: uploaded, and its envelope deleted in the same transaction (the
   * record keeps `envelopeSha256`). A failed upload's envelope is kept until then.
   */
  markUploaded(credentialId: string, storagePath: string | null, at: Date): Promise<void>;
  /**
   * Records a failed attempt. When it is the `giveUpAfter`-th attempt, the upload becomes `failed`
   * (no further attempts until `retryFailedUploads`); else it stays pending until `nextAttemptAt`.
   */
  markUploadFailed(
    credentialId: string,
    error: string,
    nextAttemptAt: Date,
    giveUpAfter: number,
  ): Promise<{ attempts: number; gaveUp: boolean }>;
  /**
   * Puts `failed` uploads (the given ones, or all) back to pending, due at `now`, attempts from 0.
   * Returns the credential ids resumed.
   */
  retryFailedUploads(credentialIds: string[] | 'all', now: Date): Promise<string[]>;
  /**
   * Outbox sweep: gives a due time to pending uploads the outbox's reads do not reach, and returns
   * how many. On PostgreSQL those are uploads a version from before its migration 023 queued
   * again (docs/architecture.md "The outbox on PostgreSQL"), looked for a bounded page per call;
   * SQLite's outbox reads the issuances themselves, so there are none.
   */
  repairUnseenUploads(now: Date): Promise<number>;
  /** Start-up: every pending upload becomes due now, whatever its backoff said, and stale leases drop. */
  makePendingDue(now: Date): Promise<void>;
  /** Earliest next attempt among pending uploads. */
  nextUploadDue(): Promise<Date | undefined>;
  countPendingUploads(): Promise<number>;
  /** When the oldest upload still pending was issued (`doctor`, readiness and the metrics). */
  oldestPendingUpload(): Promise<Date | undefined>;
  /** Uploads the outbox gave up on (`doctor`, readiness and the metrics). */
  countFailedUploads(): Promise<number>;
}

export interface PartitionRecord {
  partition: number;
  size: number;
  bits: 1 | 2;
  allocated: number;
  publishedAt: Date | null;
  token: string | null;
  etag: string | null;
}

/** What a partition's token is built from, read at one instant. */
export interface PartitionSnapshot {
  record: PartitionRecord;
  /** Indexes with a non-zero status. */
  statuses: Array<{ index: number; status: CredentialStatus }>;
  /** Voided by any later status change in the partition (and by a newer snapshot of it). */
  ticket: string;
}

export interface StatusStore {
  getPartition(partition: number): Promise<PartitionRecord | undefined>;
  listPartitions(): Promise<PartitionRecord[]>;
  /** Reads a partition's statuses for a rebuild and drops its cached token; undefined if unknown. */
  snapshotPartition(partition: number): Promise<PartitionSnapshot | undefined>;
  /**
   * Caches the token built from a snapshot, unless a status change voided its ticket meanwhile
   * (a stale token must never be cached); returns whether it was cached.
   */
  savePartitionToken(
    partition: number,
    token: string,
    etag: string,
    publishedAt: Date,
    ticket: string,
    /** Its `status_list.published` webhook event, written with the token (while an endpoint exists). */
    event?: NewWebhookEvent,
  ): Promise<boolean>;
  /**
   * Applies a status change in one transaction with the partition's cache invalidation.
   * Returns the record after, or undefined for an unknown nonce.
   */
  changeStatus(
    nonce: number,
    change: StatusChange,
    at: Date,
    audit?: AuditActor,
  ): Promise<IssuanceRecord | undefined>;
}

/** A status change to apply together with another write (`Iden3Store.commitIden3State`). */
export interface StatusChangeRequest {
  nonce: number;
  change: StatusChange;
  at: Date;
  /** Recorded (action: the change, target: the nonce) in the same transaction. */
  audit?: AuditActor | undefined;
}

export interface ClaimsRecord {
  userId: string;
  schemaId: string;
  claims: Record<string, unknown>;
  expiresAt: Date | null;
}

export interface ClaimsStore {
  getClaims(userId: string, schemaId: string): Promise<ClaimsRecord | undefined>;
  /** With `audit`, a `claims.import` audit row commits with the records. */
  upsertClaims(records: ClaimsRecord[], audit?: AuditActor): Promise<number>;
  countClaims(): Promise<number>;
}

/** What admin tooling may see of an issuance: metadata only, never claims or the envelope. */
export type IssuanceSummary = Pick<
  IssuanceRecord,
  | 'credentialId'
  | 'channel'
  | 'holderDid'
  | 'schemaId'
  | 'proofType'
  | 'revocationNonce'
  | 'statusSlot'
  | 'kid'
  | 'createdAt'
  | 'expiresAt'
  | 'status'
  | 'revokedAt'
  | 'uploadState'
  | 'storagePath'
>;

/** Admin history filter on the derived status (revoked wins over expired, expired over suspended). */
export type HistoryStatusFilter =
  | 'valid'
  | 'revoked'
  | 'suspended'
  | 'expired'
  | 'upload_pending'
  | 'upload_failed';

/**
 * The sort key of a history row, (createdAt, id): `id` is the engine's insertion order (SQLite
 * rowid, PostgreSQL seq) and breaks createdAt ties. A keyset page starts after it.
 */
export interface HistoryCursor {
  createdAt: Date;
  id: number;
}

export interface HistoryQuery {
  /** OFFSET paging (docs/interface.md "Paging"): reads every row before the page. Unset: keyset paging. */
  page?: number | undefined;
  /** Keyset paging: the page starts after this row (unset: the first page). */
  after?: HistoryCursor | undefined;
  limit: number;
  order: 'createdAt_desc' | 'createdAt_asc';
  holderDid?: string | undefined;
  schemaId?: string | undefined;
  revocationNonce?: number | undefined;
  proofType?: ProofType | undefined;
  status?: HistoryStatusFilter | undefined;
  /** The keyed hash of a normalised email: direct issuances to that address only. */
  emailHash?: string | undefined;
  channel?: Channel | undefined;
  /** Created at or after. */
  createdFrom?: Date | undefined;
  /** Created before. */
  createdTo?: Date | undefined;
  /** Also count every matching row: one more query over all of them. */
  total?: boolean | undefined;
  now: Date;
}

/**
 * One page. A keyset page may hold fewer than `limit` records (even none) and still have a `next`:
 * the read stops after a bounded number of rows (docs/interface.md "Paging"). `next` is null at the end.
 */
export interface HistoryPage {
  records: IssuanceSummary[];
  next: HistoryCursor | null;
  total?: number | undefined;
}

export interface IssuanceHistoryStore {
  list(q: HistoryQuery): Promise<HistoryPage>;
  /** The holder's credentials of a schema that are neither revoked nor expired (valid or suspended). */
  activeFor(holderDid: string, schemaId: string, now: Date): Promise<IssuanceSummary[]>;
  /**
   * The renewal links of these credentials, both ways (issuances.renewed_from): the credential each
   * renews, and the one that renews it. Credentials with neither are absent.
   */
  renewalLinks(credentialIds: string[]): Promise<Map<string, RenewalLinks>>;
  /** The batch-issue run a credential was issued in (issuances.batch_id); null when none. */
  batchOf(credentialId: string): Promise<string | null>;
}

export type IdempotencyBegin =
  | { kind: 'started' }
  | { kind: 'replay'; status: number; body: unknown }
  /** The key was used with another request body. */
  | { kind: 'mismatch' }
  | { kind: 'in-progress' };

/** Idempotency-Key bookkeeping for admin routes: one row per (scope, key). */
export interface IdempotencyStore {
  /** Claims the key for a request, or says how it was used. An unfinished claim older than `staleMs` is taken over. */
  begin(
    scope: string,
    key: string,
    requestHash: string,
    now: Date,
    staleMs: number,
  ): Promise<IdempotencyBegin>;
  /** Stores the answer to replay. */
  complete(scope: string, key: string, status: number, body: unknown): Promise<void>;
  /** Forgets an unfinished claim (the request failed; a retry runs it again). */
  release(scope: string, key: string): Promise<void>;
  /** Drops keys created before `before`. */
  prune(before: Date): Promise<number>;
}

/** The three trees of an Iden3 identity (claims, revocation, roots). */
export type Iden3TreeName = 'claims' | 'revocation' | 'roots';

/** A Merkle tree node as stored: its type byte and its two 32-byte halves (64 bytes). */
export interface Iden3StoredNode {
  type: number;
  data: Uint8Array;
}

/** Tree writes computed ahead of a commit: content-addressed nodes and the new roots. */
export interface Iden3TreeWrites {
  nodes: Array<{ tree: Iden3TreeName; key: Uint8Array; node: Iden3StoredNode }>;
  roots: Array<{ tree: Iden3TreeName; root: Uint8Array }>;
}

/** One recorded state of the issuer identity; hashes in hex (`Hash.hex()`). */
export interface Iden3StateRecord {
  /** Increases with every state. */
  seq: number;
  state: string;
  claimsTreeRoot: string;
  revocationTreeRoot: string;
  rootOfRoots: string;
  createdAt: string;
}

export interface NewIden3State {
  state: string;
  claimsTreeRoot: string;
  revocationTreeRoot: string;
  rootOfRoots: string;
  change: 'genesis' | 'revocation';
  revocationNonce: bigint | null;
  createdAt: string;
}

export interface Iden3IdentityRecord {
  did: string;
  /** Hex of the BabyJubJub public key. */
  publicKey: string;
  /** Hex of the auth claim. */
  authClaim: string;
}

/**
 * Iden3 identity storage: tree nodes, roots, the identity and its states. Tree
 * changes are computed first (reads only), then written with the new state in one transaction.
 */
export interface Iden3Store {
  getNode(tree: Iden3TreeName, key: Uint8Array): Promise<Iden3StoredNode | undefined>;
  getRoot(tree: Iden3TreeName): Promise<Uint8Array | undefined>;
  getIdentity(): Promise<Iden3IdentityRecord | undefined>;
  latestState(): Promise<Iden3StateRecord | undefined>;
  genesisState(): Promise<Iden3StateRecord | undefined>;
  findState(stateHex: string): Promise<Iden3StateRecord | undefined>;
  /**
   * Genesis, in one transaction: the trees, the identity and its first state. When another process
   * recorded an identity meanwhile, writes nothing and returns false.
   */
  createIden3Identity(
    genesis: Iden3TreeWrites & { identity: Iden3IdentityRecord; state: NewIden3State },
  ): Promise<boolean>;
  /**
   * One transaction: unless a state newer than `baseSeq` was recorded meanwhile (then nothing is
   * written: `committed` false), writes the tree nodes and roots, records the state, and applies
   * `statusChange` (the issuance record's revocation) with it, and each of `statusChanges` (a bulk
   * revocation: many nonces, one state).
   */
  commitIden3State(
    commit: Iden3TreeWrites & {
      baseSeq: number;
      state: NewIden3State;
      statusChange?: StatusChangeRequest;
      statusChanges?: StatusChangeRequest[];
    },
  ): Promise<{ committed: boolean; record?: IssuanceRecord | undefined }>;
}

/** One row of the audit log. */
export interface AuditEntry {
  at: Date;
  actor: string;
  action: AuditAction;
  target: string;
  reason?: string | undefined;
  /** The bulk status change job the entry belongs to. */
  jobId?: string | undefined;
}

export interface AuditQuery {
  /** OFFSET paging, as for {@link HistoryQuery}; unset: keyset paging by id. */
  page?: number | undefined;
  /** Keyset paging: the page starts after the entry with this id (newest first: smaller ids). */
  after?: number | undefined;
  limit: number;
  action?: AuditAction | undefined;
  actor?: string | undefined;
  /** At or after. */
  from?: Date | undefined;
  /** Before. */
  to?: Date | undefined;
  total?: boolean | undefined;
}

/** One page of the audit log; `next` as in {@link HistoryPage}. */
export interface AuditPage {
  records: AuditEntry[];
  next: number | null;
  total?: number | undefined;
}

export interface AuditStore {
  /** For changes that are not one database transaction (key rotation writes files; publishing). */
  record(entry: AuditEntry): Promise<void>;
  /** Newest first. */
  list(q: AuditQuery): Promise<AuditPage>;
}

/** What the database knows about itself (`environment`: the kind of start that created it). */
export interface MetaStore {
  get(key: string): Promise<string | undefined>;
  /** Writes `value` unless the key has one; returns the value now stored. */
  setIfAbsent(key: string, value: string): Promise<string>;
}

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

/**
 * Leased locks across the processes on one database (PostgreSQL instances, SQLite workers). No
 * connection is held while locked; a holder that dies loses the lock when its lease ends.
 */
export interface NamedLockStore {
  /** Takes `name` for `owner` unless another owner holds an unexpired lease; returns whether taken. */
  tryAcquire(name: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Extends `owner`'s lease by `leaseMs` from now; false when it no longer holds it (the lease ran out and another took it). */
  renew(name: string, owner: string, leaseMs: number): Promise<boolean>;
  release(name: string, owner: string): Promise<void>;
}

/**
 * A credential offer of the OpenID4VCI channel as stored (src/oid4vci/offers.ts). Secrets are
 * kept only as SHA-256 digests: the offer id, the pre-authorized code, the transaction code, the
 * access token.
 */
export interface Oid4vciOffer {
  offerHash: string;
  codeHash: string;
  schemaId: string;
  configurationId: string;
  /** The claims provider's user id (or, for an offer made by email, a keyed hash of the email). */
  userId: string;
  emailHash: string | null;
  /** Inline claims given with the offer; null: the claims provider's for `userId`, at issuance. */
  claims: Record<string, unknown> | null;
  txCodeHash: string | null;
  /** Transaction codes compared for this offer (a bounded number, each counted before it is compared). */
  txCodeAttempts: number;
  /** `offered` → `token` (the code exchanged) → `issued`; `locked` when its last tx_code check was wrong. */
  state: 'offered' | 'token' | 'issued' | 'locked';
  expiresAt: Date;
  tokenHash: string | null;
  tokenExpiresAt: Date | null;
  /** RFC 9449 §6: the JWK thumbprint the access token is bound to, when the wallet used DPoP. */
  dpopJkt: string | null;
  credentialId: string | null;
  /** The admin (key name) who made the offer: the actor of the issuance in the audit log. */
  createdBy: string;
  createdAt: Date;
}

export type NewOid4vciOffer = Omit<
  Oid4vciOffer,
  'txCodeAttempts' | 'state' | 'tokenHash' | 'tokenExpiresAt' | 'dpopJkt' | 'credentialId'
>;

/**
 * Offers, codes, tokens and nonces of the OpenID4VCI channel, in the database so that any instance
 * answers any step. Each change of state is one conditional write: of two instances racing on one
 * code, token or nonce, exactly one wins.
 */
export interface Oid4vciStore {
  createOffer(offer: NewOid4vciOffer): Promise<void>;
  offerByHash(offerHash: string): Promise<Oid4vciOffer | undefined>;
  offerByCode(codeHash: string): Promise<Oid4vciOffer | undefined>;
  offerByToken(tokenHash: string): Promise<Oid4vciOffer | undefined>;
  /**
   * Takes one transaction code check before the code is compared: counts it if the offer is still
   * `offered`, not expired at `now`, and has had fewer than `maxChecks` checks; answers the count
   * with this one. Undefined: no check is left (locked, used, expired or unknown). One statement,
   * so concurrent requests on any number of instances never get more than `maxChecks` between them.
   */
  takeTxCodeCheck(offerHash: string, maxChecks: number, now: Date): Promise<number | undefined>;
  /** `offered` → `locked`: the last transaction code check an offer had was wrong. */
  lockOffer(offerHash: string): Promise<boolean>;
  /**
   * `offered` → `token`: the pre-authorized code exchanged for an access token, if the offer is
   * still `offered` and not expired at `now`.
   */
  exchangeCode(
    offerHash: string,
    token: { tokenHash: string; expiresAt: Date; dpopJkt: string | null },
    now: Date,
  ): Promise<boolean>;
  /** `token` → `issued` with the credential it gave. */
  markIssued(offerHash: string, credentialId: string): Promise<boolean>;
  createNonce(nonce: string, expiresAt: Date): Promise<void>;
  /** Removes a nonce and answers its expiry; undefined when there is none (unknown or taken). */
  takeNonce(nonce: string): Promise<Date | undefined>;
  /**
   * RFC 9449 §11.1: records a DPoP proof (the digest of its key thumbprint and `jti`) until
   * `expiresAt`; false when it is recorded already and that record has not expired at `now` (a
   * replay).
   */
  rememberDpopProof(proofHash: string, expiresAt: Date, now: Date): Promise<boolean>;
  /** RFC 9449 §8: a server-provided DPoP nonce, accepted in any proof until `expiresAt`. */
  createDpopNonce(nonce: string, expiresAt: Date): Promise<void>;
  /** The expiry of a DPoP nonce this server gave; undefined when it gave none such. */
  dpopNonceExpiry(nonce: string): Promise<Date | undefined>;
  /**
   * Drops nonces (both kinds) and remembered DPoP proofs expired before `before`, and offers whose
   * offer and access token expired before it.
   */
  prune(before: Date): Promise<number>;
}

/** A signed-in console session (the cookie's value is never stored, only its SHA-256). */
export interface ConsoleSessionRecord {
  actor: string;
  /** The fingerprint of the admin key that opened it (null: a console sign-in recorded before migrations 022/027 added the column). */
  keyHash: string | null;
  createdAt: Date;
  lastSeenAt: Date;
}

/** When a console session ends: `idleMs` after its last request, `absoluteMs` after its sign-in. */
export interface ConsoleSessionLimits {
  idleMs: number;
  absoluteMs: number;
}

/** Issuances recorded in one hour (`hour`: `YYYY-MM-DDTHH`, UTC) of one channel and proof type. */
export interface HourlyIssuances {
  hour: string;
  channel: Channel;
  proofType: ProofType;
  count: number;
}

/** The admin console's sessions (shared by every instance) and its own reads, each through an index. */
export interface ConsoleStore {
  createSession(idHash: string, actor: string, keyHash: string, at: Date): Promise<void>;
  /**
   * The live console sign-in under `idHash`, its last request moved to `now`; undefined when there is none
   * or it has ended (idle or too old), and then it is removed.
   */
  useSession(
    idHash: string,
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<ConsoleSessionRecord | undefined>;
  /** Removes the session under `idHash`; answers whether there was one. */
  endSession(idHash: string): Promise<boolean>;
  /** The live console sign-ins (not idle, not too old), oldest first, with their `idHash`. */
  listSessions(
    now: Date,
    limits: ConsoleSessionLimits,
  ): Promise<Array<ConsoleSessionRecord & { idHash: string }>>;
  /** Removes every console sign-in that has ended; answers how many. */
  endExpiredSessions(now: Date, limits: ConsoleSessionLimits): Promise<number>;
  /** Issuances created at or after `since`, per hour, channel and proof type (issuances_created). */
  issuancesPerHour(since: Date): Promise<HourlyIssuances[]>;
  /** Audit entries whose target is one of `targets`, newest first (audit_log_target). */
  auditTrail(targets: string[], limit: number): Promise<AuditEntry[]>;
}

export interface Store {
  /** The engine's name (`sqlite`, `postgres`): logs and tests only; code asks for the parts below. */
  kind: string;
  issuances: IssuanceStore;
  audit: AuditStore;
  meta: MetaStore;
  status: StatusStore;
  claims: ClaimsStore;
  history: IssuanceHistoryStore;
  idempotency: IdempotencyStore;
  iden3: Iden3Store;
  /**
   * Private keys kept in the database, sealed, shared by every instance. Absent: the keys are
   * files in KEYS_DIR (one machine).
   */
  keys?: KeyMaterialStore | undefined;
  /** Leased locks shared by every process on the database (instances, or WORKERS=N on one file). */
  locks: NamedLockStore;
  webhooks: WebhookStore;
  oid4vci: Oid4vciStore;
  /** Bulk status change jobs (docs/operations.md "Bulk status changes"). */
  statusJobs: StatusJobStore;
  /** Signing keys declared compromised, never published again. */
  compromisedKeys: CompromisedKeyStore;
  /** What renewing each direct credential needs, and what came of it (docs/operations.md "Renewal"). */
  renewals: RenewalStore;
  /** The admin console's sessions and the reads only its pages make. */
  console: ConsoleStore;
  /**
   * One round trip to the database (readiness); rejects when it cannot answer, and, given
   * `timeoutMs`, when it does not answer within it (the connection is then given up).
   */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}
