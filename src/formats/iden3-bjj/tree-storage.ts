import {
  type Bytes,
  Hash,
  type ITreeStorage,
  Merkletree,
  NODE_TYPE_LEAF,
  NODE_TYPE_MIDDLE,
  type Node,
  NodeLeaf,
  NodeMiddle,
  ZERO_HASH,
} from '@iden3/js-merkletree';
import type { Iden3Store, Iden3StoredNode, Iden3TreeName, Iden3TreeWrites } from '../../store/store.js';

export type { Iden3TreeName };

/** Depth of the claims, revocation and roots trees (Iden3 identity circuits use 40 levels). */
export const IDEN3_TREE_DEPTH = 40;

function hashFromBytes(bytes: Uint8Array): Hash {
  return new Hash(Uint8Array.from(bytes));
}

function encodeNode(n: Node): Iden3StoredNode {
  if (n instanceof NodeMiddle) {
    return { type: NODE_TYPE_MIDDLE, data: Buffer.concat([n.childL.value, n.childR.value]) };
  }
  if (n instanceof NodeLeaf) {
    return { type: NODE_TYPE_LEAF, data: Buffer.concat([n.entry[0].value, n.entry[1].value]) };
  }
  // js-merkletree never stores empty nodes (addNode short-circuits them).
  throw new Error(`unexpected Merkle tree node type ${n.type}`);
}

function decodeNode(stored: Iden3StoredNode): Node {
  const left = hashFromBytes(stored.data.subarray(0, 32));
  const right = hashFromBytes(stored.data.subarray(32, 64));
  if (stored.type === NODE_TYPE_MIDDLE) return new NodeMiddle(left, right);
  if (stored.type === NODE_TYPE_LEAF) return new NodeLeaf(left, right);
  throw new Error(`invalid Merkle tree node type ${stored.type} in the Iden3 tree storage`);
}

/**
 * `@iden3/js-merkletree` storage over an `Iden3Store` (docs/architecture.md: tree nodes in the database).
 *
 * Reads go to the store (committed data); writes are buffered in memory until `writes()` hands
 * them to one store commit (`createIden3Identity`, `commitIden3State`) with the new state, so a
 * failed or abandoned update leaves nothing behind (`discard()`).
 */
export class StoreTreeStorage implements ITreeStorage {
  readonly #store: Iden3Store;
  readonly #tree: Iden3TreeName;
  readonly #pending = new Map<string, Node>();
  #pendingRoot: Hash | undefined;

  constructor(store: Iden3Store, tree: Iden3TreeName) {
    this.#store = store;
    this.#tree = tree;
  }

  async get(k: Bytes): Promise<Node | undefined> {
    const key = Buffer.from(k);
    const pending = this.#pending.get(key.toString('hex'));
    if (pending) return pending;
    const stored = await this.#store.getNode(this.#tree, key);
    return stored ? decodeNode(stored) : undefined;
  }

  async put(k: Bytes, n: Node): Promise<void> {
    this.#pending.set(Buffer.from(k).toString('hex'), n);
  }

  async getRoot(): Promise<Hash> {
    return this.#pendingRoot ?? this.committedRoot();
  }

  async setRoot(r: Hash): Promise<void> {
    this.#pendingRoot = r;
  }

  /** The root as stored (ignoring buffered writes). */
  async committedRoot(): Promise<Hash> {
    const root = await this.#store.getRoot(this.#tree);
    return root ? hashFromBytes(root) : ZERO_HASH;
  }

  /** The buffered nodes and root, for the store commit that records them. */
  writes(): Iden3TreeWrites {
    return {
      nodes: [...this.#pending].map(([keyHex, node]) => ({
        tree: this.#tree,
        key: Buffer.from(keyHex, 'hex'),
        node: encodeNode(node),
      })),
      roots: this.#pendingRoot ? [{ tree: this.#tree, root: Uint8Array.from(this.#pendingRoot.value) }] : [],
    };
  }

  discard(): void {
    this.#pending.clear();
    this.#pendingRoot = undefined;
  }
}

/**
 * A tree over a fresh storage. Merkletree caches its root in the instance, so one instance per
 * operation keeps a rolled-back or concurrent change from leaving a stale root behind.
 */
export function openTree(
  store: Iden3Store,
  tree: Iden3TreeName,
): { mt: Merkletree; storage: StoreTreeStorage } {
  const storage = new StoreTreeStorage(store, tree);
  return { mt: new Merkletree(storage, true, IDEN3_TREE_DEPTH), storage };
}
