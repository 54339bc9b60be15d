import type { IssuanceRecord } from './issuance-store.js';
import type { StatusChangeRequest } from './status-store.js';

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
