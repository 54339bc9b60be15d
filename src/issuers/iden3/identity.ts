import { Claim, ClaimOptions, DID, SchemaHash } from '@iden3/js-iden3-core';
import { ErrEntryIndexAlreadyExists, Hash, hashElems, type Proof, ZERO_HASH } from '@iden3/js-merkletree';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from '../../store/sqlite/database.js';
import type { BjjKey } from './bjj-key.js';
import { type Iden3DidOptions, resolveDidType } from './did-type.js';
import { openTree } from './sqlite-tree-storage.js';

/** One recorded state of the issuer identity (table iden3_states). */
export interface Iden3State {
  /** Row id: increases with every state. */
  readonly seq: number;
  readonly state: Hash;
  readonly claimsTreeRoot: Hash;
  readonly revocationTreeRoot: Hash;
  readonly rootOfRoots: Hash;
  readonly createdAt: string;
}

interface StateRow {
  id: number;
  state: string;
  claims_tree_root: string;
  revocation_tree_root: string;
  roots_tree_root: string;
  created_at: string;
}

interface IdentityRow {
  did: string;
  public_key: string;
  auth_claim: string;
}

const STATE_COLUMNS = 'id, state, claims_tree_root, revocation_tree_root, roots_tree_root, created_at';

function toState(row: StateRow): Iden3State {
  return {
    seq: row.id,
    state: Hash.fromHex(row.state),
    claimsTreeRoot: Hash.fromHex(row.claims_tree_root),
    revocationTreeRoot: Hash.fromHex(row.revocation_tree_root),
    rootOfRoots: Hash.fromHex(row.roots_tree_root),
    createdAt: row.created_at,
  };
}

/** Iden3 identity state = Poseidon(claimsTreeRoot, revocationTreeRoot, rootOfRoots). */
export function identityStateHash(claimsTreeRoot: Hash, revocationTreeRoot: Hash, rootOfRoots: Hash): Hash {
  return hashElems([claimsTreeRoot.bigInt(), revocationTreeRoot.bigInt(), rootOfRoots.bigInt()]);
}

/**
 * The auth claim of a BabyJubJub key: Iden3 auth schema hash, public key (x, y) in the index slots,
 * revocation nonce 0 (as js-sdk `IdentityWallet.createIdentity` and issuer-node create it).
 */
export function buildAuthClaim(publicKey: readonly [bigint, bigint]): Claim {
  return Claim.newClaim(
    SchemaHash.authSchemaHash,
    ClaimOptions.withIndexDataInts(publicKey[0], publicKey[1]),
    ClaimOptions.withRevocationNonce(0n),
  );
}

/** The revocation nonce of the auth claim; never a credential's. */
export const AUTH_CLAIM_REVOCATION_NONCE = 0;

// Concurrent state changes in a process queue here (one chain per database connection), so each
// computes its new revocation root from the state the previous one committed.
const queues = new WeakMap<SqliteDatabase, Promise<unknown>>();

function serialized<T>(db: SqliteDatabase, fn: () => Promise<T>): Promise<T> {
  const tail = queues.get(db) ?? Promise.resolve();
  const run = tail.then(fn, fn);
  queues.set(
    db,
    run.then(
      () => undefined,
      () => undefined,
    ),
  );
  return run;
}

// Another process sharing the file (DESIGN §9) can commit a state between our read and our write;
// the write then sees a newer state and starts over. A handful of rounds is plenty.
const MAX_COMMIT_ATTEMPTS = 8;

export interface RevokeResult {
  state: Iden3State;
  /** The nonce was already in the revocation tree: no new state. */
  alreadyRevoked: boolean;
}

/**
 * The issuer's Iden3 identity (DESIGN §6): auth claim in the claims tree, revocation and roots trees,
 * all persisted through `SqliteTreeStorage`, and the list of states.
 */
export class Iden3Identity {
  readonly did: DID;
  readonly authClaim: Claim;
  readonly genesis: Iden3State;
  /** Inclusion proof of the auth claim against the genesis claims tree root. */
  readonly authClaimMtp: Proof;
  readonly #db: SqliteDatabase;
  readonly #selectLatest: BetterSqlite3.Statement<[], StateRow>;
  readonly #selectByState: BetterSqlite3.Statement<[string], StateRow>;

  private constructor(
    db: SqliteDatabase,
    did: DID,
    authClaim: Claim,
    genesis: Iden3State,
    authClaimMtp: Proof,
  ) {
    this.#db = db;
    this.#selectLatest = db.prepare(`SELECT ${STATE_COLUMNS} FROM iden3_states ORDER BY id DESC LIMIT 1`);
    this.#selectByState = db.prepare(`SELECT ${STATE_COLUMNS} FROM iden3_states WHERE state = ?`);
    this.did = did;
    this.authClaim = authClaim;
    this.genesis = genesis;
    this.authClaimMtp = authClaimMtp;
  }

  /**
   * Loads the identity of `db`, creating the genesis state on first use. Reopening the same database
   * with the same key and DID options gives the same DID and roots; another key, or options that
   * would name the identity differently, is an error rather than a silent new identity.
   */
  static async open(db: SqliteDatabase, key: BjjKey, didOptions: Iden3DidOptions): Promise<Iden3Identity> {
    const didType = resolveDidType(didOptions);
    const authClaim = buildAuthClaim(key.signer.publicKey);
    const selectIdentity = db.prepare<[], IdentityRow>(
      'SELECT did, public_key, auth_claim FROM iden3_identity WHERE id = 1',
    );

    if (!selectIdentity.get()) await Iden3Identity.#createGenesis(db, authClaim, didType, key);

    const row = selectIdentity.get();
    if (!row) throw new Error('iden3_identity: genesis was not recorded');
    if (row.public_key !== key.publicKeyHex || row.auth_claim !== authClaim.hex()) {
      throw new Error(
        `${key.file}: this key is not the key of the Iden3 identity ${row.did} recorded in the database`,
      );
    }
    const genesisRow = db
      .prepare<[], StateRow>(`SELECT ${STATE_COLUMNS} FROM iden3_states WHERE change = 'genesis'`)
      .get();
    if (!genesisRow) throw new Error('iden3_states: the genesis state is missing');
    const genesis = toState(genesisRow);
    const did = DID.newFromIdenState(didType, genesis.state.bigInt());
    if (did.string() !== row.did) {
      throw new Error(
        `Iden3 DID options (IDEN3_METHOD, IDEN3_BLOCKCHAIN, IDEN3_NETWORK) give ${did.string()}, but the database holds ${row.did}`,
      );
    }
    const { mt } = openTree(db, 'claims');
    const { proof } = await mt.generateProof(authClaim.hIndex(), genesis.claimsTreeRoot);
    if (!proof.existence) throw new Error('iden3_tree_nodes: the auth claim is not in the claims tree');
    return new Iden3Identity(db, did, authClaim, genesis, proof);
  }

  // Genesis (Iden3 identity spec): claims tree = { auth claim }, empty revocation and roots trees,
  // state = Poseidon(ctr, 0, 0), DID = genesis identifier of that state.
  static async #createGenesis(db: SqliteDatabase, authClaim: Claim, didType: Uint8Array, key: BjjKey) {
    const { mt, storage } = openTree(db, 'claims');
    if (!storage.committedRoot().equals(ZERO_HASH)) {
      throw new Error('iden3_tree_roots: a claims tree exists without an identity; refusing to start over');
    }
    const { hi, hv } = authClaim.hiHv();
    await mt.add(hi, hv);
    const claimsTreeRoot = await mt.root();
    const state = identityStateHash(claimsTreeRoot, ZERO_HASH, ZERO_HASH);
    const did = DID.newFromIdenState(didType, state.bigInt());
    const now = new Date().toISOString();
    db.transaction(() => {
      // Another process may have written the genesis in the meantime: keep theirs (open() then
      // checks it is for this key).
      if (db.prepare('SELECT 1 FROM iden3_identity WHERE id = 1').get()) return;
      storage.commit();
      db.prepare(
        'INSERT INTO iden3_identity (id, did, public_key, auth_claim, created_at) VALUES (1, ?, ?, ?, ?)',
      ).run(did.string(), key.publicKeyHex, authClaim.hex(), now);
      insertState(db, state, claimsTreeRoot, ZERO_HASH, ZERO_HASH, 'genesis', null, now);
    }).immediate();
  }

  latestState(): Iden3State {
    const row = this.#selectLatest.get();
    if (!row) throw new Error('iden3_states: no state recorded');
    return toState(row);
  }

  /** A state this identity has had, by its hex value (for DID resolution of a given state). */
  findState(stateHex: string): Iden3State | undefined {
    const row = this.#selectByState.get(stateHex);
    return row ? toState(row) : undefined;
  }

  /**
   * Inserts `nonce` into the revocation tree and records the new state; `inSameTransaction` runs in
   * the same SQLite transaction (it must be synchronous: better-sqlite3). An already revoked nonce
   * leaves the trees alone; the callback still runs (in its own transaction) so the caller's record
   * converges either way.
   */
  revoke(nonce: bigint, inSameTransaction?: () => void): Promise<RevokeResult> {
    const db = this.#db;
    return serialized(db, async () => {
      for (let attempt = 1; attempt <= MAX_COMMIT_ATTEMPTS; attempt++) {
        const base = this.latestState();
        const { mt, storage } = openTree(db, 'revocation');
        try {
          await mt.add(nonce, 0n);
        } catch (err) {
          if (err !== ErrEntryIndexAlreadyExists) throw err;
          storage.discard();
          if (inSameTransaction) db.transaction(inSameTransaction).immediate();
          return { state: this.latestState(), alreadyRevoked: true };
        }
        const revocationTreeRoot = await mt.root();
        // The roots tree takes the claims-tree root when claims are added (js-sdk
        // addCredentialsToMerkleTree); revocation leaves claims and roots trees as they are.
        const state = identityStateHash(base.claimsTreeRoot, revocationTreeRoot, base.rootOfRoots);
        const committed = db
          .transaction(() => {
            if (this.latestState().seq !== base.seq) return false;
            storage.commit();
            insertState(
              db,
              state,
              base.claimsTreeRoot,
              revocationTreeRoot,
              base.rootOfRoots,
              'revocation',
              nonce,
              new Date().toISOString(),
            );
            inSameTransaction?.();
            return true;
          })
          .immediate();
        if (committed) return { state: this.latestState(), alreadyRevoked: false };
        storage.discard();
      }
      throw new Error('iden3_states: the state kept changing under this revocation; giving up');
    });
  }

  /** Membership (revoked) or non-membership proof of `nonce` in the latest revocation tree. */
  async revocationProof(nonce: bigint): Promise<{ state: Iden3State; proof: Proof }> {
    const state = this.latestState();
    const { mt } = openTree(this.#db, 'revocation');
    const { proof } = await mt.generateProof(nonce, state.revocationTreeRoot);
    return { state, proof };
  }
}

function insertState(
  db: SqliteDatabase,
  state: Hash,
  claimsTreeRoot: Hash,
  revocationTreeRoot: Hash,
  rootOfRoots: Hash,
  change: 'genesis' | 'revocation',
  nonce: bigint | null,
  createdAt: string,
): void {
  db.prepare(
    `INSERT INTO iden3_states (state, claims_tree_root, revocation_tree_root, roots_tree_root, change, revocation_nonce, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    state.hex(),
    claimsTreeRoot.hex(),
    revocationTreeRoot.hex(),
    rootOfRoots.hex(),
    change,
    nonce,
    createdAt,
  );
}
