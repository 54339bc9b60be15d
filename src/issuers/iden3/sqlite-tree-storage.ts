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
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from '../../store/sqlite/database.js';

/** The three trees of an Iden3 identity (DESIGN §6). */
export type Iden3TreeName = 'claims' | 'revocation' | 'roots';

/** Depth of the claims, revocation and roots trees (Iden3 identity circuits use 40 levels). */
export const IDEN3_TREE_DEPTH = 40;

interface NodeRow {
  node_type: number;
  node_data: Buffer;
}

interface Statements {
  getNode: BetterSqlite3.Statement<[string, Buffer], NodeRow>;
  putNode: BetterSqlite3.Statement<[string, Buffer, number, Buffer]>;
  getRoot: BetterSqlite3.Statement<[string], { root: Buffer }>;
  putRoot: BetterSqlite3.Statement<[string, Buffer]>;
}

const statementsByDb = new WeakMap<SqliteDatabase, Statements>();

function statements(db: SqliteDatabase): Statements {
  let s = statementsByDb.get(db);
  if (!s) {
    s = {
      getNode: db.prepare<[string, Buffer], NodeRow>(
        'SELECT node_type, node_data FROM iden3_tree_nodes WHERE tree = ? AND node_key = ?',
      ),
      // Content-addressed: the same key always carries the same node, so a repeat is a no-op.
      putNode: db.prepare<[string, Buffer, number, Buffer]>(
        'INSERT OR IGNORE INTO iden3_tree_nodes (tree, node_key, node_type, node_data) VALUES (?, ?, ?, ?)',
      ),
      getRoot: db.prepare<[string], { root: Buffer }>('SELECT root FROM iden3_tree_roots WHERE tree = ?'),
      putRoot: db.prepare<[string, Buffer]>(
        'INSERT INTO iden3_tree_roots (tree, root) VALUES (?, ?) ON CONFLICT (tree) DO UPDATE SET root = excluded.root',
      ),
    };
    statementsByDb.set(db, s);
  }
  return s;
}

function hashFromBytes(bytes: Uint8Array): Hash {
  return new Hash(Uint8Array.from(bytes));
}

function encodeNode(n: Node): { type: number; data: Buffer } {
  if (n instanceof NodeMiddle) {
    return { type: NODE_TYPE_MIDDLE, data: Buffer.concat([n.childL.value, n.childR.value]) };
  }
  if (n instanceof NodeLeaf) {
    return { type: NODE_TYPE_LEAF, data: Buffer.concat([n.entry[0].value, n.entry[1].value]) };
  }
  // js-merkletree never stores empty nodes (addNode short-circuits them).
  throw new Error(`unexpected Merkle tree node type ${n.type}`);
}

function decodeNode(row: NodeRow): Node {
  const left = hashFromBytes(row.node_data.subarray(0, 32));
  const right = hashFromBytes(row.node_data.subarray(32, 64));
  if (row.node_type === NODE_TYPE_MIDDLE) return new NodeMiddle(left, right);
  if (row.node_type === NODE_TYPE_LEAF) return new NodeLeaf(left, right);
  throw new Error(`invalid Merkle tree node type ${row.node_type} in iden3_tree_nodes`);
}

/**
 * `@iden3/js-merkletree` storage over better-sqlite3 (DESIGN §9: tree nodes in the database).
 *
 * Reads go to SQLite (committed data); writes are buffered in memory until `commit()`, which the
 * caller runs synchronously inside its own SQLite transaction. Tree operations are async (the
 * library's API) while better-sqlite3 transactions must be synchronous: computing first and writing
 * in one synchronous transaction keeps other statements on the shared connection from ever landing
 * inside it, and a failed or abandoned update leaves nothing behind (`discard()`).
 */
export class SqliteTreeStorage implements ITreeStorage {
  readonly #db: SqliteDatabase;
  readonly #tree: Iden3TreeName;
  readonly #pending = new Map<string, Node>();
  #pendingRoot: Hash | undefined;

  constructor(db: SqliteDatabase, tree: Iden3TreeName) {
    this.#db = db;
    this.#tree = tree;
  }

  async get(k: Bytes): Promise<Node | undefined> {
    const key = Buffer.from(k);
    const pending = this.#pending.get(key.toString('hex'));
    if (pending) return pending;
    const row = statements(this.#db).getNode.get(this.#tree, key);
    return row ? decodeNode(row) : undefined;
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

  /** The root as stored (ignoring buffered writes). Synchronous. */
  committedRoot(): Hash {
    const row = statements(this.#db).getRoot.get(this.#tree);
    return row ? hashFromBytes(row.root) : ZERO_HASH;
  }

  /** Writes the buffered nodes and root. Synchronous: run it inside the caller's transaction. */
  commit(): void {
    const s = statements(this.#db);
    for (const [keyHex, node] of this.#pending) {
      const { type, data } = encodeNode(node);
      s.putNode.run(this.#tree, Buffer.from(keyHex, 'hex'), type, data);
    }
    if (this.#pendingRoot) s.putRoot.run(this.#tree, Buffer.from(this.#pendingRoot.value));
    this.discard();
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
  db: SqliteDatabase,
  tree: Iden3TreeName,
): { mt: Merkletree; storage: SqliteTreeStorage } {
  const storage = new SqliteTreeStorage(db, tree);
  return { mt: new Merkletree(storage, true, IDEN3_TREE_DEPTH), storage };
}
