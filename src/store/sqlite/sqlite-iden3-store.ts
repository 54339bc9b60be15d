import type BetterSqlite3 from 'better-sqlite3';
import { IDEN3_STATE_COLUMNS, type Iden3StateColumns, iden3StateFromRow } from '../iden3-row.js';
import type {
  Iden3IdentityRecord,
  Iden3StateRecord,
  Iden3Store,
  Iden3StoredNode,
  Iden3TreeName,
  Iden3TreeWrites,
  IssuanceRecord,
  NewIden3State,
  StatusChangeRequest,
} from '../store.js';
import type { SqliteDatabase } from './database.js';
import type { SqliteStatusStore } from './sqlite-status-store.js';

type StateRow = Iden3StateColumns<number>;

/**
 * Iden3 identity storage over better-sqlite3 (tables of migration 003). Reads see committed data;
 * each commit is one synchronous `BEGIN IMMEDIATE` transaction, so other statements on the shared
 * connection never land inside it and a failure leaves nothing behind.
 */
export class SqliteIden3Store implements Iden3Store {
  readonly #db: SqliteDatabase;
  readonly #status: SqliteStatusStore;
  readonly #stmts: {
    getNode: BetterSqlite3.Statement<[string, Buffer], { node_type: number; node_data: Buffer }>;
    putNode: BetterSqlite3.Statement<[string, Buffer, number, Buffer]>;
    getRoot: BetterSqlite3.Statement<[string], { root: Buffer }>;
    putRoot: BetterSqlite3.Statement<[string, Buffer]>;
    identity: BetterSqlite3.Statement<[], { did: string; public_key: string; auth_claim: string }>;
    insertIdentity: BetterSqlite3.Statement<[string, string, string, string]>;
    latest: BetterSqlite3.Statement<[], StateRow>;
    genesis: BetterSqlite3.Statement<[], StateRow>;
    byState: BetterSqlite3.Statement<[string], StateRow>;
    insertState: BetterSqlite3.Statement<[string, string, string, string, string, bigint | null, string]>;
  };

  /** `status` applies the issuance record's change inside the same transaction as the trees. */
  constructor(db: SqliteDatabase, status: SqliteStatusStore) {
    this.#db = db;
    this.#status = status;
    this.#stmts = {
      getNode: db.prepare(
        'SELECT node_type, node_data FROM iden3_tree_nodes WHERE tree = ? AND node_key = ?',
      ),
      // Content-addressed: the same key always carries the same node, so a repeat is a no-op.
      putNode: db.prepare(
        'INSERT OR IGNORE INTO iden3_tree_nodes (tree, node_key, node_type, node_data) VALUES (?, ?, ?, ?)',
      ),
      getRoot: db.prepare('SELECT root FROM iden3_tree_roots WHERE tree = ?'),
      putRoot: db.prepare(
        'INSERT INTO iden3_tree_roots (tree, root) VALUES (?, ?) ON CONFLICT (tree) DO UPDATE SET root = excluded.root',
      ),
      identity: db.prepare('SELECT did, public_key, auth_claim FROM iden3_identity WHERE id = 1'),
      insertIdentity: db.prepare(
        'INSERT INTO iden3_identity (id, did, public_key, auth_claim, created_at) VALUES (1, ?, ?, ?, ?)',
      ),
      latest: db.prepare(`SELECT ${IDEN3_STATE_COLUMNS} FROM iden3_states ORDER BY id DESC LIMIT 1`),
      genesis: db.prepare(`SELECT ${IDEN3_STATE_COLUMNS} FROM iden3_states WHERE change = 'genesis'`),
      byState: db.prepare(`SELECT ${IDEN3_STATE_COLUMNS} FROM iden3_states WHERE state = ?`),
      insertState: db.prepare(
        `INSERT INTO iden3_states (state, claims_tree_root, revocation_tree_root, roots_tree_root, change, revocation_nonce, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
    };
  }

  async getNode(tree: Iden3TreeName, key: Uint8Array): Promise<Iden3StoredNode | undefined> {
    const row = this.#stmts.getNode.get(tree, Buffer.from(key));
    return row ? { type: row.node_type, data: row.node_data } : undefined;
  }

  async getRoot(tree: Iden3TreeName): Promise<Uint8Array | undefined> {
    return this.#stmts.getRoot.get(tree)?.root;
  }

  async getIdentity(): Promise<Iden3IdentityRecord | undefined> {
    const row = this.#stmts.identity.get();
    return row ? { did: row.did, publicKey: row.public_key, authClaim: row.auth_claim } : undefined;
  }

  async latestState(): Promise<Iden3StateRecord | undefined> {
    return this.#latest();
  }

  async genesisState(): Promise<Iden3StateRecord | undefined> {
    const row = this.#stmts.genesis.get();
    return row ? iden3StateFromRow(row) : undefined;
  }

  async findState(stateHex: string): Promise<Iden3StateRecord | undefined> {
    const row = this.#stmts.byState.get(stateHex);
    return row ? iden3StateFromRow(row) : undefined;
  }

  async createIden3Identity(
    genesis: Iden3TreeWrites & { identity: Iden3IdentityRecord; state: NewIden3State },
  ): Promise<boolean> {
    return this.#db
      .transaction(() => {
        if (this.#stmts.identity.get()) return false;
        this.#writeTrees(genesis);
        const { identity, state } = genesis;
        this.#stmts.insertIdentity.run(identity.did, identity.publicKey, identity.authClaim, state.createdAt);
        this.#insertState(state);
        return true;
      })
      .immediate();
  }

  async commitIden3State(
    commit: Iden3TreeWrites & {
      baseSeq: number;
      state: NewIden3State;
      statusChange?: StatusChangeRequest;
      statusChanges?: StatusChangeRequest[];
    },
  ): Promise<{ committed: boolean; record?: IssuanceRecord | undefined }> {
    return this.#db
      .transaction(() => {
        if (this.#latest()?.seq !== commit.baseSeq) return { committed: false };
        this.#writeTrees(commit);
        this.#insertState(commit.state);
        const change = commit.statusChange;
        const record = change
          ? this.#status.applyStatusChange(change.nonce, change.change, change.at, change.audit)
          : undefined;
        for (const c of commit.statusChanges ?? [])
          this.#status.applyStatusChange(c.nonce, c.change, c.at, c.audit);
        return { committed: true, record };
      })
      .immediate();
  }

  #latest(): Iden3StateRecord | undefined {
    const row = this.#stmts.latest.get();
    return row ? iden3StateFromRow(row) : undefined;
  }

  #writeTrees(writes: Iden3TreeWrites): void {
    for (const { tree, key, node } of writes.nodes)
      this.#stmts.putNode.run(tree, Buffer.from(key), node.type, Buffer.from(node.data));
    for (const { tree, root } of writes.roots) this.#stmts.putRoot.run(tree, Buffer.from(root));
  }

  #insertState(s: NewIden3State): void {
    this.#stmts.insertState.run(
      s.state,
      s.claimsTreeRoot,
      s.revocationTreeRoot,
      s.rootOfRoots,
      s.change,
      s.revocationNonce,
      s.createdAt,
    );
  }
}
