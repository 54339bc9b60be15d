export { BJJ_KEY_FILE, type BjjKey, generateBjjKey, loadOrCreateBjjKey } from './bjj-key.js';
export { BjjSigner } from './bjj-signer.js';
export { DEFAULT_IDEN3_DID, type Iden3DidOptions } from './did-type.js';
export {
  type CredentialStatusAnswer,
  Iden3BjjIssuer,
  type Iden3BjjIssuerOptions,
  type Iden3StateJson,
  type IssueTimings,
  type MtpJson,
} from './iden3-bjj-issuer.js';
export { defaultMerklizeWorkers, MerklizePool } from './merklize-pool.js';
