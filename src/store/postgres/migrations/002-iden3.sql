-- Iden3 BJJ_SIG_2021 back-end, as sqlite/migrations/003-iden3.sql: the issuer
-- identity, its three sparse Merkle trees (claims, revocation, roots; depth 40) and every
-- published state. Tree writes from several instances are serialized by an advisory lock held
-- across the read-compute-commit of one change, so nodes, roots and the new state commit together.

CREATE TABLE iden3_identity (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  did         TEXT NOT NULL,
  public_key  TEXT NOT NULL,
  auth_claim  TEXT NOT NULL,
  created_at  TEXT NOT NULL
);

-- Content-addressed by the node hash (32 bytes, little-endian): nodes are only ever added.
-- node_type 0 = middle (data = left ‖ right child hash), 1 = leaf (data = key ‖ value hash).
CREATE TABLE iden3_tree_nodes (
  tree       TEXT NOT NULL CHECK (tree IN ('claims', 'revocation', 'roots')),
  node_key   BYTEA NOT NULL,
  node_type  SMALLINT NOT NULL CHECK (node_type IN (0, 1)),
  node_data  BYTEA NOT NULL,
  PRIMARY KEY (tree, node_key)
);

CREATE TABLE iden3_tree_roots (
  tree  TEXT PRIMARY KEY CHECK (tree IN ('claims', 'revocation', 'roots')),
  root  BYTEA NOT NULL
);

-- Genesis and every later state: state = Poseidon(claimsTreeRoot, revocationTreeRoot, rootOfRoots).
-- created_at is the ISO text the identity code writes (as in SQLite), returned exactly as given.
CREATE TABLE iden3_states (
  id                    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state                 TEXT NOT NULL UNIQUE,
  claims_tree_root      TEXT NOT NULL,
  revocation_tree_root  TEXT NOT NULL,
  roots_tree_root       TEXT NOT NULL,
  change                TEXT NOT NULL CHECK (change IN ('genesis', 'revocation')),
  revocation_nonce      BIGINT,
  created_at            TEXT NOT NULL
);
