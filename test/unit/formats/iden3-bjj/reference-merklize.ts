import { poseidon } from '@iden3/js-crypto';
import { type Hasher, Merklizer, Path } from '@iden3/js-jsonld-merklization';
import {
  CREDENTIAL_SUBJECT_IRI,
  type MerklizedCredential,
} from '../../../../src/formats/iden3-bjj/core-claim.js';
import type { LocalDocumentLoaderFn } from '../../../../src/formats/iden3-bjj/document-loader.js';

/**
 * js-crypto's Poseidon behind a memo: the hasher the kit used before its own merklizer. Path keys
 * and constant values repeat across credentials; only repeated work is skipped (merklize-pool.test.ts
 * checks a memo against the plain hasher).
 */
class JsCryptoMemoHasher implements Hasher {
  readonly #bytes = new Map<string, bigint>();
  readonly #elems = new Map<string, bigint>();

  async hash(inp: bigint[]): Promise<bigint> {
    const key = inp.join(',');
    let h = this.#elems.get(key);
    if (h === undefined) {
      h = poseidon.hash(inp);
      if (this.#elems.size < 100_000) this.#elems.set(key, h);
    }
    return h;
  }

  async hashBytes(b: Uint8Array): Promise<bigint> {
    const key = Buffer.from(b).toString('latin1');
    let h = this.#bytes.get(key);
    if (h === undefined) {
      h = poseidon.hashBytes(b);
      if (this.#bytes.size < 100_000) this.#bytes.set(key, h);
    }
    return h;
  }

  prime(): bigint {
    return poseidon.F.p;
  }
}

const hasher = new JsCryptoMemoHasher();

/**
 * The reference merklization: `@iden3/js-jsonld-merklization` `Merklizer.merklizeJSONLD` with its
 * `@iden3/js-merkletree` tree and js-crypto's Poseidon, as js-sdk `W3CCredential.merklize` runs it
 * (the kit's path before merklize.ts). Tests compare the kit against it; scripts/bench times both.
 */
export async function referenceMerklize(
  credential: Record<string, unknown>,
  documentLoader: LocalDocumentLoaderFn,
): Promise<MerklizedCredential> {
  const { proof: _proof, ...withoutProof } = credential;
  const mz = await Merklizer.merklizeJSONLD(JSON.stringify(withoutProof), { documentLoader, hasher });
  const root = (await mz.root()).bigInt();
  const typeIri = mz.rawValue(new Path([CREDENTIAL_SUBJECT_IRI, '@type'], mz.hasher));
  return { root, typeIri: String(typeIri) };
}
