-- Iden3 BJJ_SIG_2021 back-end: the issuer identity, its three sparse Merkle trees
-- (claims, revocation, roots; depth 40) and every published state. Owned by src/issuers/iden3.

-- One issuer identity per database: the DID derived from the genesis state and the auth claim
-- holding the BabyJubJub public key of KEYS_DIR/iden3-bjj.json.
CREATE TABLE iden3_identity (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  did TEXT NOT NULL,
  public_key TEXT NOT NULL,
  auth_claim TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- Tree nodes as @iden3/js-merkletree stores them: content-addressed by the node hash (32 bytes,
-- little-endian), so nodes are only ever added and every past root stays provable.
-- node_type 0 = middle (data = left ‖ right child hash), 1 = leaf (data = key ‖ value hash).
CREATE TABLE iden3_tree_nodes (
  tree TEXT NOT NULL CHECK (tree IN ('claims', 'revocation', 'roots')),
  node_key BLOB NOT NULL,
  node_type INTEGER NOT NULL CHECK (node_type IN (0, 1)),
  node_data BLOB NOT NULL,
  PRIMARY KEY (tree, node_key)
) WITHOUT ROWID;

-- Current root of each tree.
CREATE TABLE iden3_tree_roots (
  tree TEXT PRIMARY KEY CHECK (tree IN ('claims', 'revocation', 'roots')),
  root BLOB NOT NULL
);

-- Genesis and every later state: state = Poseidon(claimsTreeRoot, revocationTreeRoot, rootOfRoots).
-- Hashes in the hex form of Iden3 proofs and /credential-status answers (Hash.hex(), little-endian).
CREATE TABLE iden3_states (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  state TEXT NOT NULL UNIQUE,
  claims_tree_root TEXT NOT NULL,
  revocation_tree_root TEXT NOT NULL,
  roots_tree_root TEXT NOT NULL,
  change TEXT NOT NULL CHECK (change IN ('genesis', 'revocation')),
  revocation_nonce INTEGER,
  created_at TEXT NOT NULL
);
