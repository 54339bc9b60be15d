import { poseidon } from '@iden3/js-crypto';
import { Claim, ClaimOptions, DID, type Id, SchemaHash } from '@iden3/js-iden3-core';
import { type Hasher, Merklizer, Path, PoseidonHasher } from '@iden3/js-jsonld-merklization';

import { keccak_256 } from '@noble/hashes/sha3.js';
import type { LocalDocumentLoaderFn } from './document-loader.js';

export const CREDENTIAL_SUBJECT_IRI = 'https://www.w3.org/2018/credentials#credentialSubject';

const schemaHashes = new Map<string, SchemaHash>();

/**
 * DESIGN §8: the claim schema hash is the last 16 bytes of keccak256 of the type's expanded IRI
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
 * The merklizer's default Poseidon hasher, memoized. Merklization spends most of its time in
 * `hashBytes` (a Poseidon sponge per IRI and string value, ~3 ms each here), and most of those inputs
 * (predicate IRIs, path keys, schema values) repeat from one credential to the next. Same function,
 * same results as the default hasher verifiers use; only repeated work is skipped.
 */
export class MemoizedPoseidonHasher implements Hasher {
  readonly #prime = new PoseidonHasher().prime();
  readonly #bytes = new LruCache<bigint>(CACHE_ENTRIES);
  readonly #elems = new LruCache<bigint>(CACHE_ENTRIES);

  async hash(inp: bigint[]): Promise<bigint> {
    const key = inp.join(',');
    let h = this.#elems.get(key);
    if (h === undefined) {
      h = poseidon.hash(inp);
      this.#elems.set(key, h);
    }
    return h;
  }

  async hashBytes(b: Uint8Array): Promise<bigint> {
    const key = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
    let h = this.#bytes.get(key);
    if (h === undefined) {
      h = poseidon.hashBytes(b);
      this.#bytes.set(key, h);
    }
    return h;
  }

  prime(): bigint {
    return this.#prime;
  }
}

const defaultHasher = new MemoizedPoseidonHasher();

export interface MerklizedCredential {
  /** Root of the credential's JSON-LD Merkle tree (without `proof`). */
  root: bigint;
  /** Expanded IRI of `credentialSubject.type`, as the context defines it. */
  typeIri: string;
}

/**
 * Merklizes the credential (without `proof`) as js-sdk `W3CCredential.merklize` does, and reads the
 * subject's type IRI back from the same expansion (js-sdk `findCredentialType`), so the schema hash
 * is computed from exactly the IRI verifiers will compute.
 */
export async function merklizeCredential(
  credential: Record<string, unknown>,
  documentLoader: LocalDocumentLoaderFn,
  hasher: Hasher = defaultHasher,
): Promise<MerklizedCredential> {
  const { proof: _proof, ...withoutProof } = credential;
  const mz = await Merklizer.merklizeJSONLD(JSON.stringify(withoutProof), { documentLoader, hasher });
  const root = (await mz.root()).bigInt();
  const typeIri = mz.rawValue(new Path([CREDENTIAL_SUBJECT_IRI, '@type'], mz.hasher));
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
 * DESIGN §8: merklized root in the value position, subject id in the index position, revocation
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
