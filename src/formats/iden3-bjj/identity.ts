import { Claim, ClaimOptions, DID, SchemaHash } from '@iden3/js-iden3-core';
import {
  ErrEntryIndexAlreadyExists,
  Hash,
  hashElems,
  type Merkletree,
  type Proof,
  ZERO_HASH,
} from '@iden3/js-merkletree';
import type {
  Iden3StateRecord,
  Iden3Store,
  IssuanceRecord,
  NewIden3State,
  StatusChangeRequest,
} from '../../store/store.js';
import { type BjjKey, keyMismatchMessage } from './bjj-key.js';
import { type Iden3DidOptions, resolveDidType } from './did-type.js';
import { openTree } from './tree-storage.js';

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

function toState(row: Iden3StateRecord): Iden3State {
  return {
    seq: row.seq,
    state: Hash.fromHex(row.state),
    claimsTreeRoot: Hash.fromHex(row.claimsTreeRoot),
    revocationTreeRoot: Hash.fromHex(row.revocationTreeRoot),
    rootOfRoots: Hash.fromHex(row.rootOfRoots),
    createdAt: row.createdAt,
  };
}

function newState(
  state: Hash,
  claimsTreeRoot: Hash,
  revocationTreeRoot: Hash,
  rootOfRoots: Hash,
  change: NewIden3State['change'],
  revocationNonce: bigint | null,
): NewIden3State {
  return {
    state: state.hex(),
    claimsTreeRoot: claimsTreeRoot.hex(),
    revocationTreeRoot: revocationTreeRoot.hex(),
    rootOfRoots: rootOfRoots.hex(),
    change,
    revocationNonce,
    createdAt: new Date().toISOString(),
  };
}

/**
 * The state after nonces went into the revocation tree (`nonce`: the one revoked, or null for
 * several). The roots tree takes the claims-tree root when claims are added (js-sdk
 * addCredentialsToMerkleTree); revocation leaves claims and roots trees as they are.
 */
async function revokedState(
  base: Iden3State,
  revocationTree: Merkletree,
  nonce: bigint | null,
): Promise<NewIden3State> {
  const revocationTreeRoot = await revocationTree.root();
  const state = identityStateHash(base.claimsTreeRoot, revocationTreeRoot, base.rootOfRoots);
  return newState(state, base.claimsTreeRoot, revocationTreeRoot, base.rootOfRoots, 'revocation', nonce);
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
const queues = new WeakMap<Iden3Store, Promise<unknown>>();

function serialized<T>(store: Iden3Store, fn: () => Promise<T>): Promise<T> {
  const tail = queues.get(store) ?? Promise.resolve();
  const run = tail.then(fn, fn);
  queues.set(
    store,
    run.then(
      () => undefined,
      () => undefined,
    ),
  );
  return run;
}

// Another process sharing the file (docs/several-instances.md) can commit a state between our read and our write;
// the write then sees a newer state and starts over. A handful of rounds is plenty.
const MAX_COMMIT_ATTEMPTS = 8;

export interface RevokeResult {
  state: Iden3State;
  /** The nonce was already in the revocation tree: no new state, and the status change was not applied. */
  alreadyRevoked: boolean;
  /** The issuance record after the status change committed with the new state. */
  record?: IssuanceRecord | undefined;
}

/**
 * The issuer's Iden3 identity (docs/architecture.md): auth claim in the claims tree, revocation and roots trees,
 * all persisted through an `Iden3Store`, and the list of states.
 */
export class Iden3Identity {
  readonly did: DID;
  readonly authClaim: Claim;
  readonly genesis: Iden3State;
  /** Inclusion proof of the auth claim against the genesis claims tree root. */
  readonly authClaimMtp: Proof;
  readonly #store: Iden3Store;

  private constructor(
    store: Iden3Store,
    did: DID,
    authClaim: Claim,
    genesis: Iden3State,
    authClaimMtp: Proof,
  ) {
    this.#store = store;
    this.did = did;
    this.authClaim = authClaim;
    this.genesis = genesis;
    this.authClaimMtp = authClaimMtp;
  }

  /**
   * Loads the identity of `store`, creating the genesis state on first use. Reopening the same
   * database with the same key and DID options gives the same DID and roots; another key, or options
   * that would name the identity differently, is an error rather than a silent new identity.
   */
  static async open(store: Iden3Store, key: BjjKey, didOptions: Iden3DidOptions): Promise<Iden3Identity> {
    const didType = resolveDidType(didOptions);
    const authClaim = buildAuthClaim(key.signer.publicKey);

    if (!(await store.getIdentity())) await Iden3Identity.#createGenesis(store, authClaim, didType, key);

    const row = await store.getIdentity();
    if (!row) throw new Error('iden3_identity: genesis was not recorded');
    if (row.publicKey !== key.publicKeyHex || row.authClaim !== authClaim.hex()) {
      throw new Error(keyMismatchMessage(key.file, row.did, row.publicKey));
    }
    const genesisRow = await store.genesisState();
    if (!genesisRow) throw new Error('iden3_states: the genesis state is missing');
    const genesis = toState(genesisRow);
    const did = DID.newFromIdenState(didType, genesis.state.bigInt());
    if (did.string() !== row.did) {
      throw new Error(
        `Iden3 DID options (IDEN3_METHOD, IDEN3_BLOCKCHAIN, IDEN3_NETWORK) give ${did.string()}, but the database holds ${row.did}`,
      );
    }
    const { mt } = openTree(store, 'claims');
    const { proof } = await mt.generateProof(authClaim.hIndex(), genesis.claimsTreeRoot);
    if (!proof.existence) throw new Error('iden3_tree_nodes: the auth claim is not in the claims tree');
    return new Iden3Identity(store, did, authClaim, genesis, proof);
  }

  // Genesis (Iden3 identity spec): claims tree = { auth claim }, empty revocation and roots trees,
  // state = Poseidon(ctr, 0, 0), DID = genesis identifier of that state.
  static async #createGenesis(store: Iden3Store, authClaim: Claim, didType: Uint8Array, key: BjjKey) {
    const { mt, storage } = openTree(store, 'claims');
    if (!(await storage.committedRoot()).equals(ZERO_HASH)) {
      // The claims root and the identity commit together (createIden3Identity): an instance starting
      // at the same moment may have committed both since open() found no identity. Only a root with
      // still no identity is a tree left without one.
      if (await store.getIdentity()) return;
      throw new Error('iden3_tree_roots: a claims tree exists without an identity; refusing to start over');
    }
    // Built from the empty tree, not from the stored root, which a simultaneous genesis may have
    // filled since the check above; the store keeps whichever genesis committed first.
    await storage.setRoot(ZERO_HASH);
    const { hi, hv } = authClaim.hiHv();
    await mt.add(hi, hv);
    const claimsTreeRoot = await mt.root();
    const state = identityStateHash(claimsTreeRoot, ZERO_HASH, ZERO_HASH);
    const did = DID.newFromIdenState(didType, state.bigInt());
    // Another process may have written the genesis in the meantime: the store then keeps theirs
    // (open() then checks it is for this key).
    await store.createIden3Identity({
      ...storage.writes(),
      identity: { did: did.string(), publicKey: key.publicKeyHex, authClaim: authClaim.hex() },
      state: newState(state, claimsTreeRoot, ZERO_HASH, ZERO_HASH, 'genesis', null),
    });
  }

  async latestState(): Promise<Iden3State> {
    const row = await this.#store.latestState();
    if (!row) throw new Error('iden3_states: no state recorded');
    return toState(row);
  }

  /** A state this identity has had, by its hex value (for DID resolution of a given state). */
  async findState(stateHex: string): Promise<Iden3State | undefined> {
    const row = await this.#store.findState(stateHex);
    return row ? toState(row) : undefined;
  }

  /**
   * Inserts `nonce` into the revocation tree and records the new state; `statusChange` (the
   * issuance record's revocation) commits in the same store transaction. An already revoked nonce
   * leaves the trees alone and applies nothing (`alreadyRevoked`): the caller applies its change.
   */
  revoke(nonce: bigint, statusChange?: StatusChangeRequest): Promise<RevokeResult> {
    const store = this.#store;
    return serialized(store, async () => {
      for (let attempt = 1; attempt <= MAX_COMMIT_ATTEMPTS; attempt++) {
        const base = await this.latestState();
        const { mt, storage } = openTree(store, 'revocation');
        try {
          await mt.add(nonce, 0n);
        } catch (err) {
          if (err !== ErrEntryIndexAlreadyExists) throw err;
          storage.discard();
          return { state: await this.latestState(), alreadyRevoked: true };
        }
        const state = await revokedState(base, mt, nonce);
        const { committed, record } = await store.commitIden3State({
          ...storage.writes(),
          baseSeq: base.seq,
          state,
          ...(statusChange ? { statusChange } : {}),
        });
        storage.discard();
        if (committed) return { state: await this.latestState(), alreadyRevoked: false, record };
      }
      throw new Error('iden3_states: the state kept changing under this revocation; giving up');
    });
  }

  /**
   * A bulk revocation (docs/operations.md "Bulk status changes"): every nonce not yet in the
   * revocation tree goes in, and one new state is recorded for all of them, with `statusChanges`
   * (the issuance records' revocations) in the same store transaction. Answers how many nonces were
   * added; with none to add, no state is recorded and the changes are not applied.
   */
  revokeMany(nonces: readonly bigint[], statusChanges: StatusChangeRequest[]): Promise<number> {
    const store = this.#store;
    return serialized(store, async () => {
      for (let attempt = 1; attempt <= MAX_COMMIT_ATTEMPTS; attempt++) {
        const base = await this.latestState();
        const { mt, storage } = openTree(store, 'revocation');
        let added = 0;
        for (const nonce of nonces) {
          try {
            await mt.add(nonce, 0n);
            added++;
          } catch (err) {
            if (err !== ErrEntryIndexAlreadyExists) throw err;
          }
        }
        if (added === 0) {
          storage.discard();
          return 0;
        }
        const state = await revokedState(base, mt, null);
        const { committed } = await store.commitIden3State({
          ...storage.writes(),
          baseSeq: base.seq,
          state,
          statusChanges,
        });
        storage.discard();
        if (committed) return added;
      }
      throw new Error('iden3_states: the state kept changing under this revocation; giving up');
    });
  }

  /** Membership (revoked) or non-membership proof of `nonce` in the latest revocation tree. */
  async revocationProof(nonce: bigint): Promise<{ state: Iden3State; proof: Proof }> {
    const state = await this.latestState();
    const { mt } = openTree(this.#store, 'revocation');
    const { proof } = await mt.generateProof(nonce, state.revocationTreeRoot);
    return { state, proof };
  }
}
