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
import { LOCK_IDEN3, type PgClient, type PgPool, withLockedTransaction } from './database.js';
import { changeStatusOn } from './postgres-status-store.js';

type StateRow = Iden3StateColumns<string>;

/**
 * Iden3 identity storage on PostgreSQL (tables of migration 002). Every write takes the same
 * transaction-level advisory lock first, so state changes from all instances form one history:
 * a commit computed from a state that another instance has since superseded (`baseSeq` is no
 * longer the latest) writes nothing, and the identity code recomputes it from the new state.
 */
export class PostgresIden3Store implements Iden3Store {
  constructor(private readonly pool: PgPool) {}

  async getNode(tree: Iden3TreeName, key: Uint8Array): Promise<Iden3StoredNode | undefined> {
    const { rows } = await this.pool.query<{ node_type: number; node_data: Buffer }>({
      name: 'pg-iden3-node',
      text: 'SELECT node_type, node_data FROM iden3_tree_nodes WHERE tree = $1 AND node_key = $2',
      values: [tree, Buffer.from(key)],
    });
    const row = rows[0];
    return row ? { type: row.node_type, data: row.node_data } : undefined;
  }

  async getRoot(tree: Iden3TreeName): Promise<Uint8Array | undefined> {
    const { rows } = await this.pool.query<{ root: Buffer }>({
      name: 'pg-iden3-root',
      text: 'SELECT root FROM iden3_tree_roots WHERE tree = $1',
      values: [tree],
    });
    return rows[0]?.root;
  }

  async getIdentity(): Promise<Iden3IdentityRecord | undefined> {
    const { rows } = await this.pool.query<{ did: string; public_key: string; auth_claim: string }>(
      'SELECT did, public_key, auth_claim FROM iden3_identity WHERE id = 1',
    );
    const row = rows[0];
    return row ? { did: row.did, publicKey: row.public_key, authClaim: row.auth_claim } : undefined;
  }

  async latestState(): Promise<Iden3StateRecord | undefined> {
    return latest(this.pool);
  }

  async genesisState(): Promise<Iden3StateRecord | undefined> {
    const { rows } = await this.pool.query<StateRow>(
      `SELECT ${IDEN3_STATE_COLUMNS} FROM iden3_states WHERE change = 'genesis'`,
    );
    return rows[0] ? iden3StateFromRow(rows[0]) : undefined;
  }

  async findState(stateHex: string): Promise<Iden3StateRecord | undefined> {
    const { rows } = await this.pool.query<StateRow>({
      name: 'pg-iden3-find-state',
      text: `SELECT ${IDEN3_STATE_COLUMNS} FROM iden3_states WHERE state = $1`,
      values: [stateHex],
    });
    return rows[0] ? iden3StateFromRow(rows[0]) : undefined;
  }

  async createIden3Identity(
    genesis: Iden3TreeWrites & { identity: Iden3IdentityRecord; state: NewIden3State },
  ): Promise<boolean> {
    return this.#locked(async (client) => {
      const { rowCount } = await client.query('SELECT 1 FROM iden3_identity WHERE id = 1');
      if (rowCount) return false;
      await writeTrees(client, genesis);
      const { identity, state } = genesis;
      await client.query(
        'INSERT INTO iden3_identity (id, did, public_key, auth_claim, created_at) VALUES (1, $1, $2, $3, $4)',
        [identity.did, identity.publicKey, identity.authClaim, state.createdAt],
      );
      await insertState(client, state);
      return true;
    });
  }

  async commitIden3State(
    commit: Iden3TreeWrites & {
      baseSeq: number;
      state: NewIden3State;
      statusChange?: StatusChangeRequest;
      statusChanges?: StatusChangeRequest[];
    },
  ): Promise<{ committed: boolean; record?: IssuanceRecord | undefined }> {
    return this.#locked(async (client) => {
      if ((await latest(client))?.seq !== commit.baseSeq) return { committed: false };
      await writeTrees(client, commit);
      await insertState(client, commit.state);
      const change = commit.statusChange;
      const record = change
        ? await changeStatusOn(client, change.nonce, change.change, change.at, change.audit)
        : undefined;
      for (const c of commit.statusChanges ?? [])
        await changeStatusOn(client, c.nonce, c.change, c.at, c.audit);
      return { committed: true, record };
    });
  }

  /** One transaction holding the Iden3 write lock (released by COMMIT or ROLLBACK). */
  #locked<T>(fn: (client: PgClient) => Promise<T>): Promise<T> {
    return withLockedTransaction(this.pool, LOCK_IDEN3, fn);
  }
}

async function latest(q: Pick<PgPool, 'query'>): Promise<Iden3StateRecord | undefined> {
  const { rows } = await q.query<StateRow>({
    name: 'pg-iden3-latest',
    text: `SELECT ${IDEN3_STATE_COLUMNS} FROM iden3_states ORDER BY id DESC LIMIT 1`,
  });
  return rows[0] ? iden3StateFromRow(rows[0]) : undefined;
}

// Nodes are content-addressed (the same key always carries the same node), so a repeat is a no-op;
// all of a change's nodes go in one statement.
async function writeTrees(client: PgClient, writes: Iden3TreeWrites): Promise<void> {
  if (writes.nodes.length > 0) {
    await client.query(
      `INSERT INTO iden3_tree_nodes (tree, node_key, node_type, node_data)
       SELECT * FROM unnest($1::text[], $2::bytea[], $3::smallint[], $4::bytea[])
       ON CONFLICT DO NOTHING`,
      [
        writes.nodes.map((n) => n.tree),
        writes.nodes.map((n) => Buffer.from(n.key)),
        writes.nodes.map((n) => n.node.type),
        writes.nodes.map((n) => Buffer.from(n.node.data)),
      ],
    );
  }
  for (const { tree, root } of writes.roots)
    await client.query(
      'INSERT INTO iden3_tree_roots (tree, root) VALUES ($1, $2) ON CONFLICT (tree) DO UPDATE SET root = excluded.root',
      [tree, Buffer.from(root)],
    );
}

async function insertState(client: PgClient, s: NewIden3State): Promise<void> {
  await client.query(
    `INSERT INTO iden3_states (state, claims_tree_root, revocation_tree_root, roots_tree_root, change, revocation_nonce, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      s.state,
      s.claimsTreeRoot,
      s.revocationTreeRoot,
      s.rootOfRoots,
      s.change,
      s.revocationNonce === null ? null : s.revocationNonce.toString(),
      s.createdAt,
    ],
  );
}
