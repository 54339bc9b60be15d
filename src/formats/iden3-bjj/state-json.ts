import type { Proof } from '@iden3/js-merkletree';
import type { Iden3State } from './identity.js';

/** State roots in the hex form Iden3 proofs and status answers use (`Hash.hex()`). */
export interface Iden3StateJson {
  state: string;
  claimsTreeRoot: string;
  revocationTreeRoot: string;
  rootOfRoots: string;
}

/** `@iden3/js-merkletree` `ProofJSON`: siblings and `node_aux` in decimal. */
export interface MtpJson {
  existence: boolean;
  siblings: string[];
  node_aux?: { key: string; value: string };
}

/**
 * docs/interface.md `GET /credential-status/:nonce`: the `SparseMerkleTreeProof` answer that js-sdk's
 * `IssuerResolver` and issuer-node read: issuer roots in hex, `mtp` in `ProofJSON` form.
 */
export interface CredentialStatusAnswer {
  issuer: Iden3StateJson;
  mtp: MtpJson;
}

export function mtpJson(proof: Proof): MtpJson {
  const json = proof.toJSON();
  return json.node_aux
    ? { existence: json.existence, siblings: json.siblings, node_aux: json.node_aux }
    : { existence: json.existence, siblings: json.siblings };
}

export function stateJson(s: Iden3State): Iden3StateJson {
  return {
    state: s.state.hex(),
    claimsTreeRoot: s.claimsTreeRoot.hex(),
    revocationTreeRoot: s.revocationTreeRoot.hex(),
    rootOfRoots: s.rootOfRoots.hex(),
  };
}
