import { Claim, ClaimOptions, DID, type Id, SchemaHash } from '@iden3/js-iden3-core';
import type { Hasher } from '@iden3/js-jsonld-merklization';
import { keccak_256 } from '@noble/hashes/sha3.js';
import type { LocalDocumentLoaderFn } from './document-loader.js';
import { merklizedRoot, merklizeEntries, SparseMerkleTreeBuilder, subjectTypeIri } from './merklize.js';
import { FIELD_ORDER, poseidonHash, poseidonHashBytes } from './poseidon.js';

export const CREDENTIAL_SUBJECT_IRI = 'https://www.w3.org/2018/credentials#credentialSubject';

const schemaHashes = new Map<string, SchemaHash>();

/**
 * docs/schemas-and-claims.md: the claim schema hash is the last 16 bytes of keccak256 of the type's expanded IRI
 * (js-sdk `calculateCoreSchemaHash(byteEncoder.encode(findCredentialType(mz)))`, Go
 * `utils.CreateSchemaHash`).
 */
export function schemaHashFromTypeIri(typeIri: string): SchemaHash {
  let sh = schemaHashes.get(typeIri);
  if (!sh) {
    sh = new SchemaHash(keccak_256(new TextEncoder().encode(typeIri)).slice(16, 32));
    schemaHashes.set(typeIri, sh);
  }
  return sh;
}

/** A bounded least-recently-used map: re-inserting on a hit keeps Map order = recency. */
class LruCache<V> {
  readonly #max: number;
  readonly #map = new Map<string, V>();

  constructor(max: number) {
    this.#max = max;
  }

  get(key: string): V | undefined {
    const v = this.#map.get(key);
    if (v !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, v);
    }
    return v;
  }

  set(key: string, v: V): void {
    this.#map.set(key, v);
    if (this.#map.size > this.#max) {
      const oldest = this.#map.keys().next();
      if (!oldest.done) this.#map.delete(oldest.value);
    }
  }
}

const CACHE_ENTRIES = 8192;

/**
 * The merklizer's Poseidon hasher (our `poseidonHash`, equal to js-crypto's), memoized. Path keys
 * (predicate IRIs), constant values of a schema and the tree nodes built only from them repeat from
 * one credential to the next; remembering them skips most of the hashing. Same results as the
 * library's `PoseidonHasher`; only repeated work is skipped.
 */
export class MemoizedPoseidonHasher implements Hasher {
  readonly #bytes = new LruCache<bigint>(CACHE_ENTRIES);
  readonly #elems = new LruCache<bigint>(CACHE_ENTRIES);

  async hash(inp: bigint[]): Promise<bigint> {
    return this.hashSync(inp);
  }

  /** `hash` without the promise (tree nodes). */
  hashSync(inp: bigint[]): bigint {
    const key = inp.join(',');
    let h = this.#elems.get(key);
    if (h === undefined) {
      h = poseidonHash(inp);
      this.#elems.set(key, h);
    }
    return h;
  }

  async hashBytes(b: Uint8Array): Promise<bigint> {
    const key = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
    let h = this.#bytes.get(key);
    if (h === undefined) {
      h = poseidonHashBytes(b);
      this.#bytes.set(key, h);
    }
    return h;
  }

  prime(): bigint {
    return FIELD_ORDER;
  }
}

const defaultHasher = new MemoizedPoseidonHasher();
const defaultTree = new SparseMerkleTreeBuilder((inp) => defaultHasher.hashSync(inp));

export interface MerklizedCredential {
  /** Root of the credential's JSON-LD Merkle tree (without `proof`). */
  root: bigint;
  /** Expanded IRI of `credentialSubject.type`, as the context defines it. */
  typeIri: string;
}

/**
 * Merklizes the credential (without `proof`) as js-sdk `W3CCredential.merklize` does
 * (`@iden3/js-jsonld-merklization`, see merklize.ts), and reads the subject's type IRI from the same
 * entries (js-sdk `findCredentialType`), so the schema hash is computed from exactly the IRI
 * verifiers will compute.
 */
export async function merklizeCredential(
  credential: Record<string, unknown>,
  documentLoader: LocalDocumentLoaderFn,
  hasher: MemoizedPoseidonHasher = defaultHasher,
): Promise<MerklizedCredential> {
  const { proof: _proof, ...withoutProof } = credential;
  // The library merklizes the JSON text: the same round trip drops undefined members the same way.
  const entries = await merklizeEntries(JSON.parse(JSON.stringify(withoutProof)), documentLoader);
  const tree =
    hasher === defaultHasher ? defaultTree : new SparseMerkleTreeBuilder((i) => hasher.hashSync(i));
  const root = await merklizedRoot(entries, hasher, tree);
  const typeIri = subjectTypeIri(entries, CREDENTIAL_SUBJECT_IRI);
  if (typeof typeIri !== 'string' || !/^[a-z][a-z0-9+.-]*:/i.test(typeIri)) {
    throw new Error(`credentialSubject.type did not expand to an absolute IRI (got ${String(typeIri)})`);
  }
  return { root, typeIri };
}

/** The holder's identifier in the claim: Iden3 DIDs by their id, others by js-iden3-core's hash of the DID. */
export function subjectIdFromDid(did: string): Id {
  return DID.idFromDID(DID.parse(did));
}

export interface CoreClaimInput {
  schemaHash: SchemaHash;
  subjectId: Id;
  revocationNonce: bigint;
  expiresAt: Date;
  merklizedRoot: bigint;
}

/**
 * docs/schemas-and-claims.md: merklized root in the value position, subject id in the index position, revocation
 * nonce, expiration (seconds), version 0, not updatable: the claim js-sdk `toCoreClaim` rebuilds
 * from the credential (it reads both positions from the claim's flags).
 */
export function buildCoreClaim(input: CoreClaimInput): Claim {
  return Claim.newClaim(
    input.schemaHash,
    ClaimOptions.withIndexId(input.subjectId),
    ClaimOptions.withRevocationNonce(input.revocationNonce),
    ClaimOptions.withExpirationDate(input.expiresAt),
    ClaimOptions.withValueMerklizedRoot(input.merklizedRoot),
  );
}

/**
 * The message BJJSignature2021 signs: Poseidon(hIndex, hValue) of the core claim. js-iden3-core's
 * `claim.hiHv()` hashes the four index and four value slots with js-crypto's Poseidon; here the same
 * slots go through ours (test/slow/merklize-equivalence.test.ts compares the two).
 */
export function claimSignedMessage(claim: Claim): bigint {
  const slots = claim.rawSlotsAsInts();
  return poseidonHash([poseidonHash(slots.slice(0, 4)), poseidonHash(slots.slice(4, 8))]);
}
