import type { Iden3StateRecord } from './store.js';

/**
 * An `iden3_states` row as an engine's driver returns it. Both engines share the columns and
 * differ only in the sequence (`Seq`: a number in SQLite, pg's bigint string).
 */
export interface Iden3StateColumns<Seq> {
  id: Seq;
  state: string;
  claims_tree_root: string;
  revocation_tree_root: string;
  roots_tree_root: string;
  created_at: string;
}

export const IDEN3_STATE_COLUMNS =
  'id, state, claims_tree_root, revocation_tree_root, roots_tree_root, created_at';

export const iden3StateFromRow = <Seq extends number | string>(
  row: Iden3StateColumns<Seq>,
): Iden3StateRecord => ({
  // pg's bigint string: the sequence is far below 2^53, so Number() is exact.
  seq: Number(row.id),
  state: row.state,
  claimsTreeRoot: row.claims_tree_root,
  revocationTreeRoot: row.revocation_tree_root,
  rootOfRoots: row.roots_tree_root,
  createdAt: row.created_at,
});
